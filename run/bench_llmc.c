// bench_llmc.c — run/bench_gpt.sh's driver of llm.c's CPU reference (not ddptok code, not a test).
//
//   bench_llmc MODEL.bin TOKENS.bin B T STEPS LR BETA1 BETA2 EPS WEIGHT_DECAY
//
// llm.c's train_gpt2.c is included whole with TESTING defined, as llm.c's own test_gpt2.c
// does, so every layer, the loss, AdamW (gpt2_update) and the DataLoader are llm.c's code
// unchanged; only its main() (whose B = 4, T = 64, file names, 40 steps and AdamW constants
// are fixed in the source) is replaced by the loop below, which reads llm.c's checkpoint
// (gpt2_build_from_checkpoint: header v3, padded vocabulary) and token file (DataLoader,
// no shuffling: contiguous B x T chunks) and times, per step, as llm.c's main does
// (dataloader_next_batch, gpt2_forward, gpt2_zero_grad, gpt2_backward, gpt2_update), each
// part apart. bench_gpt.sh compiles it against LLMC_DIR with the flags llm.c's Makefile gives
// train_gpt2 (`make -n train_gpt2`); OMP_NUM_THREADS sets the threads.
//
// The last line of stdout is one JSON object: tokens and seconds of steps 2..STEPS (step 1
// allocates the activations and gradients), the seconds split (data, forward, backward =
// zero_grad + backward, optimizer), the mean loss of steps 1 and 2, the OpenMP threads and
// the peak RSS (KiB).
#define TESTING
#include "train_gpt2.c"

#include <sys/resource.h>

static double seconds_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc != 11) {
        fprintf(stderr, "usage: bench_llmc MODEL.bin TOKENS.bin B T STEPS LR BETA1 BETA2 EPS WEIGHT_DECAY\n");
        return 2;
    }
    int B = atoi(argv[3]), T = atoi(argv[4]), steps = atoi(argv[5]);
    float lr = strtof(argv[6], NULL), beta1 = strtof(argv[7], NULL), beta2 = strtof(argv[8], NULL), eps = strtof(argv[9], NULL),
          wd = strtof(argv[10], NULL);
    if (B < 1 || T < 1 || steps < 2) {
        fprintf(stderr, "bench_llmc: B, T >= 1 and STEPS >= 2\n");
        return 2;
    }
    GPT2 model;
    gpt2_build_from_checkpoint(&model, argv[1]);
    if (T > model.config.max_seq_len) {
        fprintf(stderr, "bench_llmc: T %d exceeds the checkpoint's max_seq_len %d\n", T, model.config.max_seq_len);
        return 2;
    }
    DataLoader loader;
    dataloader_init(&loader, argv[2], B, T, 0, 1, 0);
    double split[4] = {0}, total = 0, loss[2] = {0};
    for (int step = 1; step <= steps; step++) {
        double t0 = seconds_now();
        dataloader_next_batch(&loader);
        double t1 = seconds_now();
        gpt2_forward(&model, loader.inputs, loader.targets, B, T);
        double t2 = seconds_now();
        gpt2_zero_grad(&model);
        gpt2_backward(&model);
        double t3 = seconds_now();
        gpt2_update(&model, lr, beta1, beta2, eps, wd, step);
        double t4 = seconds_now();
        if (step <= 2) loss[step - 1] = model.mean_loss;
        if (step >= 2) {
            split[0] += t1 - t0, split[1] += t2 - t1, split[2] += t3 - t2, split[3] += t4 - t3;
            total += t4 - t0;
        }
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    int threads = 1;
#ifdef OMP
    threads = omp_get_max_threads();
#endif
    printf("{\"tokens\": %lld, \"seconds\": %.6f, \"split\": {\"data\": %.6f, \"forward\": %.6f, \"backward\": %.6f, \"optimizer\": %.6f}, "
           "\"losses\": [%.7f, %.7f], \"B\": %d, \"T\": %d, \"threads\": %d, \"maxrss_kib\": %ld}\n",
           (long long)B * T * (steps - 1), total, split[0], split[1], split[2], split[3], loss[0], loss[1], B, T, threads,
           ru.ru_maxrss);
    dataloader_free(&loader);
    gpt2_free(&model);
    return 0;
}
