// check_env.c — `check-env`: backend, MPI world, hosts, devices and one test all-reduce
// with exact sums; --dual: two ranks on two distinct GPUs.
#include <stdlib.h>
#include <string.h>

#include "app/app.h"
#include "base/mem.h"
#include "base/report.h"
#include "job/cuda_api.h"

typedef struct {
    int dual;  // --dual
} CheckEnvOptions;

static int check_env_run(App *app) {
    Comm *cm = &app->comm;
    int W = cm->world;
    char device[200] = "none (cpu backend)", uuid[33] = "";
#ifdef DDPTOK_CUDA
    // check-env opens the CUDA module whatever the backend, to say whether it would load.
    char cuda_why[1200] = "";
    const CudaModule *cuda = cuda_module_try(cuda_why, sizeof cuda_why);
    if (app->compute->on_device) {
        cuda->describe_device(device, sizeof device);
        cuda->device_uuid(uuid);
    }
#endif
    char mine[400], *all = xcalloc((size_t)W, 400), *uuids = xcalloc((size_t)W, 33);
    snprintf(mine, sizeof mine, "host %s, local rank %d of %d, %s", g_id.host, cm->local_rank, cm->local_size, device);
    comm_gather_str(cm, mine, all, 400);
    comm_gather_str(cm, uuid, uuids, 33);
    // One test all-reduce through the data plane with exact sums: counts rank+1 sum to
    // W(W+1)/2; floats rank+1 average to (W+1)/2.
    int64_t cnt = cm->rank + 1;
    float v[4] = {(float)(cm->rank + 1), 1.0f, 0.0f, 2.0f * (float)(cm->rank + 1)};
    cm->ops->allreduce_sum_i64(cm, &cnt, 1);
#ifdef DDPTOK_CUDA
    if (cm->ops->device_buffers) {
        void *d = cuda->upload(v, sizeof v);
        cm->ops->allreduce_avg_f32(cm, d, 4);
        cuda->download_free(d, v, sizeof v);
    } else
#endif
        cm->ops->allreduce_avg_f32(cm, v, 4);
    int ok = cnt == (int64_t)W * (W + 1) / 2 && v[0] == (float)(W + 1) / 2 && v[1] == 1.0f && v[2] == 0.0f && v[3] == (float)(W + 1);
    ok = comm_agree(cm, !ok) == 0;
    char info[1024];
    build_info(info, sizeof info);
    say("%s\n", info);  // the NCCL version is in it
    say("check-env: backend %s, comm %s, MPI world %d\n", app->compute->name, cm->ops->name, W);
#ifdef DDPTOK_CUDA
    if (cuda) say("check-env: CUDA module loads, %d GPU(s) visible here\n", cuda->device_count());
    else say("check-env: %s\n", cuda_why);
#endif
    for (int r = 0; r < W && cm->rank == 0; r++) say("  rank %d: %s\n", r, text_safe(all + (size_t)r * 400));
    say("  test all-reduce: int64 sum %lld (expected %lld), float average %g (expected %g): %s\n", (long long)cnt,
        (long long)W * (W + 1) / 2, v[0], (W + 1) / 2.0, ok ? "ok" : "WRONG");
    int dual_ok = 1;
    if (((const CheckEnvOptions *)app->opts)->dual && cm->rank == 0) {
        dual_ok = W == 2 && uuids[0] && uuids[33] && strcmp(uuids, uuids + 33) != 0;
        say("check-env --dual: %s\n", dual_ok ? "2 ranks on 2 distinct GPUs: ok"
                                               : "FAILED: needs exactly 2 ranks on 2 distinct GPUs (cuda backend)");
    }
    comm_bcast(cm, &dual_ok, sizeof dual_ok, 0);
    free(all), free(uuids);
    return ok && dual_ok ? 0 : EXIT_CHECK_FAILED;
}

const Command cmd_check_env = {
    .name = "check-env",
    .run = check_env_run,
    .distributed = 1,
    .summary = "backend, MPI world, hosts, devices and one test all-reduce",
    .options = (const CommandOption[]){
        OPTION_FLAG("--dual", CheckEnvOptions, dual, "demand 2 ranks on 2 distinct GPUs (exit 1 otherwise)"),
        OPTION_END,
    },
    .opts_size = sizeof(CheckEnvOptions),
};
