B=/work/main/build/bin
echo "bundle,shape,threads,round,median_ms"
for r in 1 2 3 4 5; do
 for f in full causal bf16 bwd bwddet; do
  case $f in bwd*) shape="-b 1 --sq 1024 --sk 1024";; *) shape="-b 2 --sq 1024 --sk 1024";; esac
  for t in 1 2; do
   ms=$($B/fmha-run /tmp/cb/$f.fmha $shape --threads $t --bench --iters 3 --warmup 1 2>&1 | grep -oE "median_ms=[0-9.]+" | cut -d= -f2)
   echo "$f,\"$shape\",$t,$r,$ms"
  done
 done
done
