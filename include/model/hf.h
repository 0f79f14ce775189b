// hf.h — the GPT in and out of the Hugging Face ecosystem (docs/model.md "Hugging Face"): a
// directory that transformers.GPT2LMHeadModel.from_pretrained(DIR) loads as it is —
// config.json and model.safetensors with HF's tensor names and its Conv1D layout (weights
// (in, out): ddptok's (out, in) transposed), the output layer tied to transformer.wte — and
// such a directory read back into θ (train.init_from).
//
// The ids: ddptok's id is the source id + 1, with 0 the begin id (docs/data.md). The HF
// vocabulary is ddptok's rotated by one: HF id h = ddptok id h + 1 for h < V − 1, and HF id
// V − 1 = ddptok's begin id 0 (its bos and eos). For a corpus of GPT-2 ids imported with
// --eot 50256 (llm.c and nanoGPT shards: V = 50257) that is GPT-2's own vocabulary: ddptok id
// t + 1 is GPT-2 id t and the begin id is <|endoftext|> (50256), so GPT-2 weights fine-tune on
// the shards and an export runs with GPT-2's tokenizer.
#ifndef DDPTOK_HF_H
#define DDPTOK_HF_H

#include <jansson.h>
#include <stdint.h>

#include "config/config.h"
#include "model/model.h"

#ifdef __cplusplus
extern "C" {
#endif

// The HF id of ddptok id d, and back.
static inline int32_t hf_id_of(int32_t d, int V) { return d == 0 ? V - 1 : d - 1; }
static inline int32_t hf_ddptok_id(int32_t h, int V) { return h == V - 1 ? 0 : h + 1; }

// Writes DIR/config.json and DIR/model.safetensors for a GPT of shape m and parameters θ (P);
// `provenance` (may be NULL; its reference is taken) goes into config.json under "ddptok".
// 0 or -1 (error printed).
int hf_export(const char *dir, const ModelShape *m, const float *theta, const Config *cfg, json_t *provenance);
// Reads an HF GPT-2 directory (config.json, model.safetensors) into θ (P) of shape m: its
// config must be GPT-2's computation (gelu_new, layer_norm_epsilon 1e-5, scaled and unscaled
// by layer attention as GPT-2's, tied output) at m's width, blocks, heads and vocabulary,
// with at least m's positions (the first max_length rows of its wpe are used). One line naming
// the file, the key or tensor and what was expected on any difference. 0 or -1. θ NULL: the
// checks of the config and of every tensor's name and shape only (ddptok --check).
// Every value is read and must be finite, under --check too; a second import in one process
// must read the same θ0 as the first.
int hf_import(const char *dir, const ModelShape *m, float *theta);
// The SHA-256 (hex) of θ0 as this process's first hf_import read it, "" before one: the
// ranks' start-up agreement compares it (app.c agree_on_run).
const char *hf_import_digest(void);

#ifdef __cplusplus
}
#endif
#endif
