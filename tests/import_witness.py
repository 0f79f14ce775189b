#!/usr/bin/env python3
"""import_witness.py — an independent writer and checker for `ddptok import` (tests/test_import.sh).

Written from docs/data.md alone, with numpy, struct, json and hashlib (no ddptok code):

  make DIR                 writes one document set in every format under DIR/<format>/ and the
                           documents themselves (source ids, per format) in DIR/<format>.docs.json;
                           and the layouts of the field with their own split: llm.c's fineweb.py
                           shards (val shard 0, documents cut across shards), nanoGPT's train.bin
                           and val.bin, Megatron prefixes per split, HF datasets' per-split JSONL
                           (input_ids) under DIR/<layout>/ and DIR/<layout>.layout.json
  check FMT DIR CORPUS --min L --max L --split-seed S --validation F --test F [--names]
                           applies the split, length and id rules to DIR/<FMT>.docs.json (or, for a
                           layout of several files, DIR/<FMT>.layout.json read in the documented
                           order; --names: each file's split from its name) and compares CORPUS
                           (corpus.h5, read with h5py) token for token; exit 1 on a difference
  corrupt DIR              writes damaged files under DIR/bad/, one per rule, and DIR/bad/cases.tsv:
                           name|format|vocab_size|path|the words (a regex) the one-line error must hold
  seeds DIR OUT            the fuzz seeds of tests/fuzz/fuzz_import.c from DIR (after make and corrupt)
                           into OUT/import_<format>/ (tests/fuzz/corpus/)
  baselines CORPUS         the test split as bytes (ids - 1): its order-0 entropy and xz -9 / zstd -19
                           sizes in bits per byte, as JSON
"""
import hashlib
import json
import math
import os
import struct
import subprocess
import sys

import numpy as np

# ---------------------------------------------------------------------------------------------
# The document set: source ids in [0, VSRC - 1), EOT = VSRC - 1 (never inside a document).
VSRC = 300          # vocab_size in the test config: VSRC + 1
EOT = VSRC - 1
V7_IDS = 70000      # llm.c v7 (uint32) ids reach past uint16: vocab_size V7_IDS + 2 for it
WORDS = ("the cat sat on a mat while rain fell over hills and rivers ran to sea; "
         "quick brown foxes jump lazily, dogs bark at night: why? because! café naïve "
         "日本 🙂").split()


def rng_docs(rng, n, high, lengths):
    return [rng.integers(0, high, size=int(rng.choice(lengths))).tolist() for _ in range(n)]


def text_docs(rng, n):
    docs = []
    for _ in range(n):
        k = int(rng.choice([0, 1, 3, 8, 20, 60]))
        docs.append(" ".join(rng.choice(WORDS) for _ in range(k)))
    return docs


LENGTHS = [0, 1, 3, 5, 9, 17, 31, 32, 33, 64, 65, 100, 150]


def write_llmc(path, magic, version, dtype, tokens):
    header = np.zeros(256, dtype="<i4")
    header[0], header[1], header[2] = magic, version, len(tokens)
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(np.asarray(tokens, dtype=dtype).tobytes())


def megatron_write(prefix, dtype, code, docs_of_seqs):
    """The Megatron _IndexWriter layout: header, version, dtype code, counts, lengths,
    pointers (running byte sums), document indices (from 0)."""
    lengths, doc_idx = [], [0]
    with open(prefix + ".bin", "wb") as b:
        for seqs in docs_of_seqs:
            for s in seqs:
                b.write(np.asarray(s, dtype=dtype).tobytes())
                lengths.append(len(s))
            doc_idx.append(len(lengths))
    size = np.dtype(dtype).itemsize
    pointers = np.concatenate([[0], np.cumsum(np.asarray(lengths, dtype=np.int64) * size)[:-1]]).astype("<i8") \
        if lengths else np.zeros(0, "<i8")
    with open(prefix + ".idx", "wb") as f:
        f.write(b"MMIDIDX\x00\x00")
        f.write(struct.pack("<Q", 1))
        f.write(struct.pack("<B", code))
        f.write(struct.pack("<Q", len(lengths)))
        f.write(struct.pack("<Q", len(doc_idx)))
        f.write(np.asarray(lengths, dtype="<i4").tobytes())
        f.write(pointers.tobytes())
        f.write(np.asarray(doc_idx, dtype="<i8").tobytes())


def make(d):
    rng = np.random.default_rng(20261130)
    os.makedirs(d, exist_ok=True)
    out = {}

    # bytes: two text files, documents separated by "\n%\n" (the fortune format).
    texts = [text_docs(rng, 40), text_docs(rng, 30)]
    os.makedirs(f"{d}/bytes", exist_ok=True)
    docs = []
    for i, t in enumerate(texts):
        raw = "\n%\n".join(t).encode()
        open(f"{d}/bytes/part{i}.txt", "wb").write(raw)
        docs += [list(x.encode()) for x in t]
    out["bytes"] = docs

    # llm.c v1 (uint16, GPT-2 style): EOT before each document, documents cut across shards.
    docs = rng_docs(rng, 60, EOT, LENGTHS)
    stream = [t for doc in docs for t in [EOT] + doc]
    os.makedirs(f"{d}/llmc", exist_ok=True)
    cut = len(stream) // 2 + 7
    write_llmc(f"{d}/llmc/shard_000.bin", 20240520, 1, "<u2", stream[:cut])
    write_llmc(f"{d}/llmc/shard_001.bin", 20240520, 1, "<u2", stream[cut:])
    out["llmc"] = docs

    # llm.c v7 (uint32, Llama 3 style), ids beyond uint16; EOT = V7_IDS.
    docs = rng_docs(rng, 30, V7_IDS, LENGTHS)
    os.makedirs(f"{d}/llmc7", exist_ok=True)
    write_llmc(f"{d}/llmc7/shard.bin", 20240801, 7, "<u4", [t for doc in docs for t in [V7_IDS] + doc])
    out["llmc7"] = docs

    # nanoGPT: headerless uint16, EOT after each document.
    docs = rng_docs(rng, 50, EOT, LENGTHS)
    os.makedirs(f"{d}/nanogpt", exist_ok=True)
    np.asarray([t for doc in docs for t in doc + [EOT]], dtype="<u2").tofile(f"{d}/nanogpt/train.bin")
    out["nanogpt"] = docs

    # Megatron: uint16 (code 8), documents of several sequences each, and an int32 pair (code 4).
    os.makedirs(f"{d}/megatron", exist_ok=True)
    docs_of_seqs = [rng_docs(rng, int(rng.integers(1, 4)), EOT, LENGTHS) for _ in range(40)]
    megatron_write(f"{d}/megatron/a_text_document", "<u2", 8, docs_of_seqs)
    out_m = [[t for s in seqs for t in s] for seqs in docs_of_seqs]
    docs_of_seqs = [rng_docs(rng, int(rng.integers(1, 3)), EOT, LENGTHS) for _ in range(20)]
    megatron_write(f"{d}/megatron/b_text_document", "<i4", 4, docs_of_seqs)
    out["megatron"] = out_m + [[t for s in seqs for t in s] for seqs in docs_of_seqs]

    # JSONL token lists: bare lists and {"tokens": [...]} objects, CRLF on some lines.
    docs = rng_docs(rng, 50, EOT, LENGTHS)
    os.makedirs(f"{d}/jsonl", exist_ok=True)
    with open(f"{d}/jsonl/a.jsonl", "wb") as f:
        for i, doc in enumerate(docs):
            line = json.dumps(doc) if i % 2 else json.dumps({"id": i, "tokens": doc})
            f.write(line.encode() + (b"\r\n" if i % 5 == 0 else b"\n"))
    out["jsonl"] = docs

    # JSONL texts: bare strings and {"text": ...} objects, escapes and non-ASCII; no final newline.
    texts = text_docs(rng, 50)
    os.makedirs(f"{d}/jsonl-text", exist_ok=True)
    with open(f"{d}/jsonl-text/a.jsonl", "wb") as f:
        lines = [json.dumps(t if i % 2 else {"text": t, "meta": {"i": i}}, ensure_ascii=bool(i % 3))
                 for i, t in enumerate(texts)]
        f.write("\n".join(lines).encode())
    out["jsonl-text"] = [list(t.encode()) for t in texts]

    # Past the readers' 1 MiB chunks: delimiters that start 1 and 2 bytes before a chunk's end
    # and exactly at one, and a JSON line of 2.4 MB that grows the line buffer across chunks.
    letters = np.frombuffer(b"abcdefghij klmnopqrstuvwxyz,.", np.uint8)
    docs, pos = [], 0
    for target in (2 ** 20 - 1, 2 ** 21 - 2, 3 * 2 ** 20):
        while target - pos > 5000:
            doc = bytes(rng.choice(letters, size=int(rng.integers(1, 3000))))
            docs.append(doc)
            pos += len(doc) + 3
        docs.append(bytes(rng.choice(letters, size=target - pos)))  # its delimiter starts at target
        pos = target + 3
    docs += [b"tail", b""]
    os.makedirs(f"{d}/bytes-big", exist_ok=True)
    open(f"{d}/bytes-big/big.txt", "wb").write(b"\n%\n".join(docs))
    out["bytes-big"] = [list(x) for x in docs]
    docs = rng_docs(rng, 20, EOT, LENGTHS) + [rng.integers(0, EOT, size=400000).tolist()] + rng_docs(rng, 5, EOT, LENGTHS)
    os.makedirs(f"{d}/jsonl-big", exist_ok=True)
    with open(f"{d}/jsonl-big/big.jsonl", "w") as f:
        f.write("".join(json.dumps(doc) + "\n" for doc in docs))
    out["jsonl-big"] = docs

    for k, v in out.items():
        json.dump(v, open(f"{d}/{k}.docs.json", "w"))
    make_layouts(d, rng)


# ---------------------------------------------------------------------------------------------
# The layouts of the field, each with the user's own split in its file names (DIR/<layout>/ and
# DIR/<layout>.layout.json: every file's name, split and documents, in the writer's order).

def fineweb_shards(docs, shard_size):
    """llm.c's dev/data/fineweb.py: every document is [EOT] + its tokens; shards of shard_size
    tokens are filled in order, a document that does not fit is cut and continues in the next
    shard; shard 0 is the validation shard, the others train."""
    shards, buf = [], []
    for doc in docs:
        toks = [EOT] + doc
        while toks:
            room = shard_size - len(buf)
            buf += toks[:room]
            toks = toks[room:]
            if len(buf) == shard_size:
                shards.append(buf)
                buf = []
    if buf:
        shards.append(buf)
    return shards


def make_layouts(d, rng):
    lay = {}
    # llm.c (fineweb.py): uint16 v1 shards, EOT before each document, fineweb_val_000000.bin
    # then fineweb_train_000001.bin.. (documents cut across every shard boundary, the
    # validation one included); the names sort train before val, the writer put val first.
    docs = rng_docs(rng, 40, EOT, [1, 5, 17, 31, 40, 64, 90])
    shards = fineweb_shards(docs, 300)
    os.makedirs(f"{d}/fineweb", exist_ok=True)
    files = []
    for i, sh in enumerate(shards):
        split = "validation" if i == 0 else "train"
        name = f"fineweb_{'val' if i == 0 else 'train'}_{i:06d}.bin"
        write_llmc(f"{d}/fineweb/{name}", 20240520, 1, "<u2", sh)
        files.append({"name": name, "split": split, "stream": sh})
    lay["fineweb"] = {"eot": EOT, "files": files}
    # nanoGPT (openwebtext/prepare.py): train.bin and val.bin, EOT after each document.
    os.makedirs(f"{d}/nanogpt2", exist_ok=True)
    files = []
    for name, split, n in (("train.bin", "train", 40), ("val.bin", "validation", 12)):
        ds = rng_docs(rng, n, EOT, LENGTHS[1:])
        stream = [t for doc in ds for t in doc + [EOT]]
        np.asarray(stream, dtype="<u2").tofile(f"{d}/nanogpt2/{name}")
        files.append({"name": name, "split": split, "stream": stream})
    lay["nanogpt2"] = {"eot": EOT, "files": files}
    # Megatron: several prefixes, one per split (--train-data-path, --valid-data-path, --test-data-path).
    os.makedirs(f"{d}/megatron2", exist_ok=True)
    files = []
    for prefix, split, n in (("corpus_train_text_document", "train", 30), ("corpus_valid_text_document", "validation", 8),
                             ("corpus_test_text_document", "test", 8)):
        dos = [rng_docs(rng, int(rng.integers(1, 3)), EOT, LENGTHS[1:]) for _ in range(n)]
        megatron_write(f"{d}/megatron2/{prefix}", "<u2", 8, dos)
        files.append({"name": prefix + ".idx", "split": split, "docs": [[t for s_ in seqs for t in s_] for seqs in dos]})
    lay["megatron2"] = {"files": files}
    # HF datasets: Dataset.map(tokenize).to_json() per split: {"input_ids": [...], "attention_mask": [...]}.
    os.makedirs(f"{d}/hf", exist_ok=True)
    files = []
    for name, split, n in (("train.jsonl", "train", 40), ("validation.jsonl", "validation", 10), ("test.jsonl", "test", 10)):
        ds = rng_docs(rng, n, EOT, LENGTHS[1:])
        with open(f"{d}/hf/{name}", "w") as f:
            for doc in ds:
                f.write(json.dumps({"input_ids": doc, "attention_mask": [1] * len(doc)}) + "\n")
        files.append({"name": name, "split": split, "docs": ds})
    lay["hf"] = {"files": files}
    for k, v in lay.items():
        json.dump(v, open(f"{d}/{k}.layout.json", "w"))


# The order docs/data.md gives a directory's files: by name with the split word left out
# and numbers by value; names equal but for it: validation, train, test.
SPLIT_WORDS = ("validation", "valid", "val", "dev", "train", "test")
SPLIT_OF = {"validation": 1, "valid": 1, "val": 1, "dev": 1, "train": 0, "test": 2}


def name_key(name):
    import re
    parts, split = [], None
    for tok in re.split(r"([A-Za-z]+|[0-9]+)", name):
        if not tok:
            continue
        if tok.lower() in SPLIT_WORDS:
            split = SPLIT_OF[tok.lower()]
            continue
        parts.append((0, int(tok), "") if tok.isdigit() else (1, 0, tok))
    rank = {1: 0, 0: 1, 2: 2}.get(split, 3)
    return (parts, rank, name)


def layout_documents(lay, names):
    """The documents the import reads, in its order: (split by name, ids) each."""
    files = sorted(lay["files"], key=lambda f: name_key(f["name"]))
    splits = {"train": 0, "validation": 1, "test": 2}
    out = []
    if "eot" in lay:  # one token stream across the files: documents at each EOT, and where the split changes
        cur, cur_split = [], None
        for f in files:
            s = splits[f["split"]]
            if names and cur_split is not None and s != cur_split:
                out.append((cur_split, cur)); cur = []
            cur_split = s
            for t in f["stream"]:
                if t == lay["eot"]:
                    out.append((cur_split, cur)); cur = []
                else:
                    cur.append(t)
        out.append((cur_split, cur))
    else:
        for f in files:
            out += [(splits[f["split"]], doc) for doc in f["docs"]]
    return out


# ---------------------------------------------------------------------------------------------
# The rules of docs/data.md, from the documents.

def split_of(ids, seed, validation, test):
    h = hashlib.sha256(b"ddptok-split-v1" + struct.pack("<I", seed) + np.asarray(ids, dtype="<i4").tobytes()).digest()
    x = (int.from_bytes(h[:8], "big") >> 11) / 2.0 ** 53
    return 2 if x < test else 1 if x < test + validation else 0


def expected(docs, lo, hi, seed, validation, test, splits=None):
    # Sequences grouped by split (train, validation, test), document order kept within each;
    # splits: each document's split by name (--split-from-names), else the hash.
    pieces = []
    d = 0
    for i, doc in enumerate(docs):
        ids = [t + 1 for t in doc]
        if not ids:
            continue
        s = splits[i] if splits is not None else split_of(ids, seed, validation, test)
        n = -(-len(ids) // hi)
        for j in range(n):
            piece = ids[j * len(ids) // n:(j + 1) * len(ids) // n]
            if len(piece) < lo:
                continue
            pieces.append((s, piece, d))
        d += 1
    tokens, offsets, split, document = [], [0], [], []
    for s, piece, d in sorted(pieces, key=lambda p: p[0]):  # stable: document order within a split
        tokens += piece
        offsets.append(len(tokens))
        split.append(s)
        document.append(d)
    return tokens, offsets, split, document


def check(fmt, d, corpus, lo, hi, seed, validation, test, names=False):
    import h5py
    if os.path.exists(f"{d}/{fmt}.layout.json"):
        read = layout_documents(json.load(open(f"{d}/{fmt}.layout.json")), names)
        docs = [doc for _, doc in read]
        want = expected(docs, lo, hi, seed, validation, test, [s for s, _ in read] if names else None)
    else:
        docs = json.load(open(f"{d}/{fmt}.docs.json"))
        want = expected(docs, lo, hi, seed, validation, test)
    f = h5py.File(corpus, "r")
    got = [f["tokens"][()].tolist(), f["offsets"][()].tolist(), f["split"][()].tolist(), f["document"][()].tolist()]
    bad = 0
    for name, w, g in zip(["tokens", "offsets", "split", "document"], want, got):
        if w != g:
            bad += 1
            first = next((i for i in range(min(len(w), len(g))) if w[i] != g[i]), min(len(w), len(g)))
            print(f"{fmt}: /{name} differs: {len(g)} values, expected {len(w)}; first difference at {first}: "
                  f"{g[first:first + 5]} vs {w[first:first + 5]}")
    attr = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
    base = {"llmc7": "llmc", "bytes-big": "bytes", "jsonl-big": "jsonl", "fineweb": "llmc", "nanogpt2": "nanogpt",
            "megatron2": "megatron", "hf": "jsonl"}.get(fmt, fmt)
    if attr.get("source") != "imported" or attr.get("import_format") != base:
        bad += 1
        print(f"{fmt}: attributes source={attr.get('source')!r} import_format={attr.get('import_format')!r}")
    counts = np.bincount(want[2], minlength=3).tolist()
    print(f"{fmt}: {len(docs)} documents -> {len(want[2])} sequences (train/validation/test {counts}), "
          f"{len(want[0])} tokens: {'identical' if not bad else 'DIFFERENT'}")
    return 1 if bad else 0


# ---------------------------------------------------------------------------------------------
# Damaged files: one per rule, with the words the error line must hold.

def corrupt(d):
    b = f"{d}/bad"
    os.makedirs(b, exist_ok=True)
    cases = []

    def case(name, fmt, opts, vocab, path, words):
        assert words and "|" not in name + path + words + opts
        cases.append("|".join([name, fmt, str(vocab), path, words, opts]))

    toks = list(range(1, 40))
    V = VSRC + 1
    # llm.c
    write_llmc(f"{b}/llmc-ok.bin", 20240520, 1, "<u2", toks)
    raw = open(f"{b}/llmc-ok.bin", "rb").read()
    open(f"{b}/llmc-truncated.bin", "wb").write(raw[:-3])
    case("llm.c shard truncated (header's token count vs the file size)", "llmc", "", V, f"{b}/llmc-truncated.bin", "offset 8: header\\[2\\] = 39 tokens")
    open(f"{b}/llmc-short.bin", "wb").write(raw[:500])
    case("llm.c shard shorter than its header", "llmc", "", V, f"{b}/llmc-short.bin", "offset 0: .*1024-byte header")
    open(f"{b}/llmc-magic.bin", "wb").write(struct.pack("<i", 20240521) + raw[4:])
    case("llm.c bad magic", "llmc", "", V, f"{b}/llmc-magic.bin", "offset 0: magic 20240521")
    open(f"{b}/llmc-version.bin", "wb").write(raw[:4] + struct.pack("<i", 7) + raw[8:])
    case("llm.c magic 20240520 with version 7", "llmc", "", V, f"{b}/llmc-version.bin", "offset 4: version 7, expected 1")
    open(f"{b}/llmc-negative.bin", "wb").write(raw[:8] + struct.pack("<i", -5) + raw[12:])
    case("llm.c negative token count", "llmc", "", V, f"{b}/llmc-negative.bin", "offset 8: header\\[2\\] = -5")
    write_llmc(f"{b}/llmc-id.bin", 20240520, 1, "<u2", toks[:10] + [VSRC] + toks)
    case("llm.c token id >= V - 1", "llmc", "", V, f"{b}/llmc-id.bin", f"offset {1024 + 20}: token 10 is {VSRC}")
    write_llmc(f"{b}/llmc7-id.bin", 20240801, 7, "<u4", toks + [2 ** 32 - 1])
    case("llm.c v7 uint32 id 2^32-1", "llmc", "", V, f"{b}/llmc7-id.bin", f"offset {1024 + 4 * 39}: token 39 is 4294967295")
    # nanoGPT
    np.asarray(toks, dtype="<u2").tofile(f"{b}/nano-ok.bin")
    open(f"{b}/nano-odd.bin", "wb").write(open(f"{b}/nano-ok.bin", "rb").read() + b"\x01")
    case("nanoGPT odd size", "nanogpt", "", V, f"{b}/nano-odd.bin", "odd size")
    np.asarray(toks + [65535], dtype="<u2").tofile(f"{b}/nano-id.bin")
    case("nanoGPT token id >= V - 1", "nanogpt", "", V, f"{b}/nano-id.bin", "offset 78: token 39 is 65535")
    case("nanoGPT reading an llm.c shard", "nanogpt", "", V, f"{b}/llmc-ok.bin", "offset 0: starts with llm.c's magic")
    # Megatron
    m = f"{b}/meg"
    megatron_write(m, "<u2", 8, [[toks[:5], toks[5:12]], [toks[12:30]], [toks[30:]]])
    idx = open(m + ".idx", "rb").read()
    S, D = 4, 4
    off_ptr, off_doc = 34 + 4 * S, 34 + 12 * S

    def meg(name, data, bin_data=None):
        p = f"{b}/{name}"
        open(p + ".idx", "wb").write(data)
        open(p + ".bin", "wb").write(open(m + ".bin", "rb").read() if bin_data is None else bin_data)
        return p + ".idx"

    case("Megatron bad magic", "megatron", "", V, meg("meg-magic", b"MMIDIDY\x00\x00" + idx[9:]), "offset 0: not a Megatron index")
    case("Megatron version 2", "megatron", "", V, meg("meg-version", idx[:9] + struct.pack("<Q", 2) + idx[17:]), "offset 9: version 2")
    case("Megatron float32 dtype", "megatron", "", V, meg("meg-float", idx[:17] + bytes([7]) + idx[18:]), "offset 17: dtype code 7 \\(float32\\)")
    case("Megatron .idx truncated", "megatron", "", V, meg("meg-idxcut", idx[:-8]), "offset 18: 4 sequences and 4 document indices need")
    case("Megatron huge counts (64-bit overflow)", "megatron", "", V,
         meg("meg-huge", idx[:18] + struct.pack("<QQ", 2 ** 62, 2 ** 62) + idx[34:]), "need more than")
    ptr = np.frombuffer(idx[off_ptr:off_doc], "<i8").copy()
    p2 = ptr.copy(); p2[2] = 4
    case("Megatron pointers decreasing", "megatron", "", V, meg("meg-decrease", idx[:off_ptr] + p2.tobytes() + idx[off_doc:]),
         f"offset {off_ptr + 8 * 2}: sequence pointers decrease")
    p3 = ptr.copy(); p3[3] = 10 ** 6
    case("Megatron pointer past the .bin", "megatron", "", V, meg("meg-past", idx[:off_ptr] + p3.tobytes() + idx[off_doc:]),
         f"offset {off_ptr + 8 * 3}: sequence 3 at byte 1000000 .* runs past")
    p4 = ptr.copy(); p4[0] = 2 ** 63 - 1
    case("Megatron pointer near 2^63 (overflow)", "megatron", "", V, meg("meg-ptrmax", idx[:off_ptr] + p4.tobytes() + idx[off_doc:]),
         f"offset {off_ptr}: sequence 0 at byte 9223372036854775807")
    dx = np.frombuffer(idx[off_doc:], "<i8").copy(); dx[2] = 1
    case("Megatron document indices decreasing", "megatron", "", V, meg("meg-docidx", idx[:off_doc] + dx.tobytes()),
         f"offset {off_doc + 16}: document index 2 is 1")
    case("Megatron .bin truncated", "megatron", "", V, meg("meg-bincut", idx, open(m + ".bin", "rb").read()[:-2]),
         "runs past the 76 bytes")
    case("Megatron .bin longer than the index", "megatron", "", V, meg("meg-binlong", idx, open(m + ".bin", "rb").read() + b"\0\0"),
         "the index covers 78 bytes of tokens")
    bad_bin = bytearray(open(m + ".bin", "rb").read()); bad_bin[6:8] = struct.pack("<H", 60000)
    case("Megatron token id >= V - 1", "megatron", "", V, meg("meg-id", idx, bytes(bad_bin)), "offset 6: token 3 is 60000")
    case("Megatron .bin missing", "megatron", "", V, f"{b}/nobin", "cannot open")
    open(f"{b}/nobin.idx", "wb").write(idx)
    # JSONL
    def jl(name, text):
        open(f"{b}/{name}.jsonl", "wb").write(text)
        return f"{b}/{name}.jsonl"
    case("JSONL not JSON", "jsonl", "", V, jl("j-syntax", b"[1, 2]\n[3, 4\n"), "line 2: not JSON")
    case("JSONL negative id", "jsonl", "", V, jl("j-neg", b"[1, 2]\n[3, -4]\n"), "offset 7: line 2: token 1 is -4")
    case("JSONL id >= V - 1", "jsonl", "", V, jl("j-big", b"[1, 2]\n{\"tokens\": [3, %d]}\n" % VSRC), f"line 2: token 1 is {VSRC}")
    case("JSONL float id", "jsonl", "", V, jl("j-float", b"[1, 2.5]\n"), "line 1: token 1 is not an integer")
    case("JSONL huge id (64-bit)", "jsonl", "", V, jl("j-huge", b"[1, 99999999999999999999]\n"), "line 1: not JSON")
    case("JSONL text in a token file", "jsonl", "", V, jl("j-text", b"[1, 2]\n\"hello\"\n"), "line 2: a text, expected a token list")
    case("JSONL empty line", "jsonl", "", V, jl("j-empty", b"[1, 2]\n\n[3]\n"), "offset 7: line 2: empty")
    case("JSONL duplicate key", "jsonl", "", V, jl("j-dup", b"{\"tokens\": [1], \"tokens\": [2]}\n"), "line 1: not JSON")
    case("JSONL text: a list line", "jsonl-text", "", V, jl("jt-list", b"\"a\"\n[1]\n"), "line 2: a list, expected a text")
    case("JSONL text: byte beyond V - 1", "jsonl-text", "", 150, jl("jt-byte", "\"caf\u00e9\"\n".encode()), "line 1: byte 195")
    # bytes
    open(f"{b}/text.txt", "wb").write(b"hello world\n%\nzebra\n")
    case("bytes: byte beyond V - 1", "bytes", "", 123, f"{b}/text.txt", "offset 14: byte 122")
    case("bytes: a missing file", "bytes", "", V, f"{b}/absent.txt", "absent.txt")
    os.makedirs(f"{b}/emptydir", exist_ok=True)
    case("bytes: a directory without files", "bytes", "", V, f"{b}/emptydir", "a directory without regular files")
    fifo = f"{b}/fifo"
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    case("bytes: a FIFO (must not block)", "bytes", "", V, fifo, "not a regular file")
    # A -1 is an id out of range, never a document break, without --eot (it was taken as one
    # in JSONL and Megatron's signed dtypes); a raw NUL between JSON values is no JSON.
    case("JSONL -1 without --eot", "jsonl", "", V, jl("j-minus1", b"[1, 2, -1, 3]\n"), "line 1: token 2 is -1, expected an integer id .*no separator")
    megatron_write(f"{b}/meg-minus1", "<i2", 3, [[[1, 2, -1, 3]], [[4, 5]]])
    case("Megatron int16 -1 without --eot", "megatron", "", V, f"{b}/meg-minus1.idx", "offset 4: token 2 is -1, expected a int16 id .*no separator")
    case("JSONL raw NUL between values", "jsonl", "", V, jl("j-nul", b"[1, 2]\x00[3]\n"), "offset 6: line 1: a NUL byte")
    case("JSONL text: raw NUL after the string", "jsonl-text", "", 257, jl("jt-nul", b"\"ab\"\x00\n"), "offset 4: line 1: a NUL byte")
    # Compressed inputs: named, with the command that decompresses them.
    import gzip, lzma
    open(f"{b}/text.txt.gz", "wb").write(gzip.compress(b"hello world\n%\nzebra\n" * 40))
    case("bytes: a gzip file", "bytes", "", 257, f"{b}/text.txt.gz", "offset 0: a gzip-compressed file .*run `gunzip -k ")
    open(f"{b}/lines.jsonl.xz", "wb").write(lzma.compress(b"[1, 2]\n" * 40))
    case("jsonl: an xz file", "jsonl", "", V, f"{b}/lines.jsonl.xz", "offset 0: a xz-compressed file .*run `unxz -k ")
    open(f"{b}/shard.zst", "wb").write(b"\x28\xb5\x2f\xfd" + bytes(60))
    case("bytes: a zstd file", "bytes", "", 257, f"{b}/shard.zst", "offset 0: a zstd-compressed file .*run `unzstd ")
    # --split-from-names: a name without a split word, or with two.
    open(f"{b}/shard_000.jsonl", "wb").write(b"[1, 2]\n")
    case("--split-from-names: a name without a split", "jsonl", "--split-from-names", V, f"{b}/shard_000.jsonl", "its name says no split")
    open(f"{b}/train_val.jsonl", "wb").write(b"[1, 2]\n")
    case("--split-from-names: a name with two splits", "jsonl", "--split-from-names", V, f"{b}/train_val.jsonl", "its name says two splits")
    # HF's objects: both keys, or neither (--key names another).
    case("JSONL tokens and input_ids both", "jsonl", "", V, jl("j-both", b"{\"tokens\": [1], \"input_ids\": [2]}\n"), "line 1: an object with both")
    case("JSONL --key absent", "jsonl", "--key ids", V, jl("j-key", b"{\"input_ids\": [2]}\n"), "line 1: an object without the --key given")
    open(f"{d}/bad/cases.tsv", "w").write("\n".join(cases) + "\n")
    print(len(cases))


# ---------------------------------------------------------------------------------------------
# Baselines anyone can recompute on the test split's bytes.

def baselines(corpus):
    import h5py
    f = h5py.File(corpus, "r")
    tok, off, split = f["tokens"][()], f["offsets"][()], f["split"][()]
    test = b"".join(bytes((tok[off[i]:off[i + 1]] - 1).astype(np.uint8)) for i in range(len(split)) if split[i] == 2)
    counts = np.bincount(np.frombuffer(test, np.uint8), minlength=256)
    p = counts[counts > 0] / len(test)
    h0 = float(-(p * np.log2(p)).sum())
    sizes = {}
    for name, cmd in (("xz -9", ["xz", "-9", "-c"]), ("zstd -19", ["zstd", "-19", "-c", "-q"])):
        try:
            sizes[name] = 8 * len(subprocess.run(cmd, input=test, capture_output=True, check=True).stdout) / len(test)
        except (OSError, subprocess.CalledProcessError):
            sizes[name] = None
    print(json.dumps({"test_bytes": len(test), "order0_bits_per_byte": h0, "xz_bits_per_byte": sizes["xz -9"],
                      "zstd_bits_per_byte": sizes["zstd -19"]}))


# ---------------------------------------------------------------------------------------------
# Seeds for the fuzz targets (tests/fuzz/fuzz_import.c's input layouts), from `make` and `corrupt`.

def seeds(d, out):
    def put(target, name, data):
        os.makedirs(f"{out}/import_{target}", exist_ok=True)
        open(f"{out}/import_{target}/{name}", "wb").write(data)

    rd = lambda p: open(p, "rb").read()
    put("bytes", "fortune-delim", b"\x00" + rd(f"{d}/bytes/part0.txt")[:3000])
    put("bytes", "blank-lines", b"\x01" + b"one\n\ntwo\n\n\nthree\n")
    put("bytes", "no-delim", b"\x02" + rd(f"{d}/bytes/part1.txt")[:500])
    put("llmc", "gpt2-v1", rd(f"{d}/llmc/shard_001.bin"))
    write_llmc(f"{d}/bad/llama3-small.bin", 20240801, 7, "<u4", [50256, 5, 70000, 9, 50256, 1, 2, 3, 4, 5, 6, 7, 8, 9] * 20)
    put("llmc", "llama3-v7", rd(f"{d}/bad/llama3-small.bin"))
    put("llmc", "truncated", rd(f"{d}/bad/llmc-truncated.bin"))
    put("nanogpt", "train", rd(f"{d}/nanogpt/train.bin")[:4000])
    for name, prefix in (("u16", f"{d}/megatron/a_text_document"), ("i32", f"{d}/megatron/b_text_document"),
                         ("small", f"{d}/bad/meg")):
        idx, binary = rd(prefix + ".idx"), rd(prefix + ".bin")
        put("megatron", name, struct.pack("<I", len(idx)) + idx + binary[:20000])
    put("jsonl", "tokens", b"\x00" + rd(f"{d}/jsonl/a.jsonl")[:6000])
    put("jsonl", "texts", b"\x01" + rd(f"{d}/jsonl-text/a.jsonl")[:6000])


def main():
    a = sys.argv[1:]
    if a[:1] == ["make"]:
        make(a[1])
    elif a[:1] == ["corrupt"]:
        corrupt(a[1])
    elif a[:1] == ["seeds"]:
        seeds(a[1], a[2])
    elif a[:1] == ["baselines"]:
        baselines(a[1])
    elif a[:1] == ["check"]:
        names = "--names" in a
        a = [x for x in a if x != "--names"]
        opts = dict(zip(a[4::2], a[5::2]))
        sys.exit(check(a[1], a[2], a[3], int(opts["--min"]), int(opts["--max"]), int(opts["--split-seed"]),
                       float(opts["--validation"]), float(opts["--test"]), names))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
