# prepare: byte-identical reruns, splits, lengths, bands, unique and disjoint windows,
# plan shape, auto bands for other world sizes; the data lock guards later commands.
W=$(workdir); cd "$W"
expect_rc "prepare minimum.yaml" 0 one prepare --config "$CONFIGS/minimum.yaml"
cp outputs/data/corpus.h5 c1.h5; cp outputs/data/plan.h5 p1.h5
sleep 1.1  # cross a clock second: HDF5 stamps objects with times unless told not to
one prepare --config "$CONFIGS/minimum.yaml" >/dev/null
cmp -s c1.h5 outputs/data/corpus.h5 && cmp -s p1.h5 outputs/data/plan.h5 && ok "same config, byte-identical corpus and plan" || bad "prepare determinism"
one prepare --config "$CONFIGS/minimum.yaml" --set seed=1235 >/dev/null
cmp -s c1.h5 outputs/data/corpus.h5 && bad "another seed gives the same corpus" || ok "another seed gives another corpus"
# The chain is O(V·S): the largest vocabulary the config allows takes seconds (it took
# minutes when every row reset a permutation of all V tokens).
DDPTOK_TEST_TIMEOUT=30 expect_rc "prepare with vocab_size 2^20 finishes within 30 s" 0 one prepare --config "$CONFIGS/tiny.yaml" --set data.vocab_size=1048576 --set paths.outputs=bigv
rm -rf bigv
one prepare --config "$CONFIGS/minimum.yaml" >/dev/null
n=$(/usr/bin/python3 -c "import h5py,numpy as np; s=h5py.File('outputs/data/corpus.h5')['split'][()]; print(*np.bincount(s))")
[ "$n" = "1024 128 256" ] && ok "splits 1024/128/256" || bad "splits" "— got $n"
out=$(/usr/bin/python3 "$ROOT/tests/check_data.py" outputs 2 2 4 100 16 128 16-64 65-128) && ok "plan: bands, unique ids per window, ranks disjoint, shape [U][W][A][B]" || { bad "plan properties"; echo "$out"; }
# Auto bands for W = 3 and 4.
for w in 3 4; do
  one prepare --config "$CONFIGS/minimum.yaml" --set train.world_size=$w --set train.rank_bands=auto > prep.txt
  bands=$(sed -nE 's/.*band \[([0-9]+), ([0-9]+)\].*/\1-\2/p' prep.txt | tr '\n' ' ')
  out=$(/usr/bin/python3 "$ROOT/tests/check_data.py" outputs $w 2 4 100 16 128 $bands) && ok "auto bands W = $w ($bands)" || { bad "auto bands W = $w"; echo "$out"; }
done
# Lock: a corpus prepared for another config is refused with a hint to run prepare.
one prepare --config "$CONFIGS/minimum.yaml" >/dev/null
expect_rc "reference refuses a corpus prepared for another batch size" 2 one reference --config "$CONFIGS/minimum.yaml" --set train.batch_size_per_rank=3
expect_grep "... and says to run prepare" 'data lock .* does not match .* run `'"$DDPTOK"' prepare --config' "$OUT"
# A damaged corpus file is refused, not used.
cp outputs/data/corpus.h5 good.h5
/usr/bin/python3 -c "import h5py; f=h5py.File('outputs/data/corpus.h5','r+'); t=f['tokens']; t[5]=(t[5]%100)+1; f.close()"
expect_rc "a modified corpus is refused by its data lock" 2 one reference --config "$CONFIGS/minimum.yaml"
head -c 5000 good.h5 > outputs/data/corpus.h5
expect_rc "a truncated corpus is refused" 2 one reference --config "$CONFIGS/minimum.yaml"
expect_grep "... naming the file" 'corpus.h5: not a readable HDF5 file' "$OUT"
cd "$ROOT"; rm -rf "$W"
