#!/usr/bin/env bash
# check_two_machines_netns.sh DETKIT CONFIG WORKDIR -- KEY VALUE...
#
# Two "machines" in two network namespaces this test creates, joined by a veth pair
# (10.213.7.1 and 10.213.7.2, reachable from nowhere else): `detkit train --num-machines 2
# --machine-rank R --dist-url tcp://10.213.7.1:PORT` in each, so rank 1 reaches the master by a
# non-loopback address. Both must finish within the time-out, rank 0 alone writing the job's
# files. Skips (exit 77) unless run as root where `ip netns` works. The namespaces are removed
# on every exit.
set -u
detkit=$1 config=$2 work=$3
shift 3
[ "${1:-}" = "--" ] && shift
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null; then
  echo "skipped: needs root and iproute2 (ip netns) to make two network namespaces"; exit 77
fi
tag=dk$$
m0=${tag}m0 m1=${tag}m1
cleanup() { ip netns delete "$m0" 2>/dev/null; ip netns delete "$m1" 2>/dev/null; }
trap cleanup EXIT
if ! ip netns add "$m0" 2>/dev/null || ! ip netns add "$m1" 2>/dev/null; then
  echo "skipped: 'ip netns add' is not permitted here"; exit 77
fi
if ! ip link add "${tag}a" type veth peer name "${tag}b" 2>/dev/null; then
  echo "skipped: a veth pair cannot be made here"; exit 77
fi
set -e
ip link set "${tag}a" netns "$m0"
ip link set "${tag}b" netns "$m1"
ip -n "$m0" addr add 10.213.7.1/24 dev "${tag}a"
ip -n "$m1" addr add 10.213.7.2/24 dev "${tag}b"
for ns in "$m0" "$m1"; do ip -n "$ns" link set lo up; done
ip -n "$m0" link set "${tag}a" up
ip -n "$m1" link set "${tag}b" up
rm -rf "$work" && mkdir -p "$work"
"$detkit" make-shapes --out "$work/datasets/shapes" --train 8 --val 2 --size 64x64 >/dev/null
port=29611
common=(--num-threads 1 train --num-machines 2 --num-gpus 1 --dist-timeout 120
        --dist-url "tcp://10.213.7.1:$port" --config-file "$config" OUTPUT_DIR "$work/out")
set +e
for r in 0 1; do
  ns=$m0; [ "$r" = 1 ] && ns=$m1
  DETKIT_DATASETS="$work/datasets" timeout 300 ip netns exec "$ns" "$detkit" "${common[@]:0:3}" \
    --machine-rank "$r" "${common[@]:3}" "$@" >"$work/machine$r.out" 2>&1 &
  pids[$r]=$!
done
status=0
for r in 0 1; do
  wait "${pids[$r]}"; code=$?
  echo "machine $r: exit code $code"
  if [ "$code" != 0 ]; then status=1; tail -30 "$work/machine$r.out"; fi
done
[ "$status" = 0 ] || exit 1
for f in config.yaml metrics.json model_final.pth log.txt log.txt.rank1; do
  [ -e "$work/out/$f" ] || { echo "$f missing from $(ls "$work/out")"; exit 1; }
done
grep -h "Rank 1 of 2" "$work/out/log.txt.rank1"
grep -q "master 10.213.7.1:$port" "$work/out/log.txt.rank1" || { echo "rank 1 did not use 10.213.7.1"; exit 1; }
echo "two machines over a veth pair: trained, rank 0 wrote the job's files"
