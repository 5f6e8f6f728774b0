#!/usr/bin/env bash
# capped-disk.sh: run a command whose reads are capped like a cloud volume's, to measure a
# warm-up where a cold server takes minutes (docs/experiments.md, "Quiet machine, and a disk
# capped like a cloud volume" and "A disk that merges neighbouring reads"). Needs root.
#
#   scripts/capped-disk.sh [--iops N] [--bps BYTES] [--merging DIR] -- COMMAND [ARGS...]
#
#   --iops N       reads per second (default 1000)
#   --bps BYTES    read bytes per second (default 67108864: 64 MiB/s)
#   --merging DIR  also mount at DIR an ext4 file system on a loop device (direct I/O,
#                  mq-deadline, 256 KiB requests) whose file lies in DIR's parent: the cap
#                  then counts the loop device's reads of that file, after queued
#                  neighbouring reads have merged, as a cloud volume counts (EBS merges
#                  sequential reads of up to 256 KiB). Put the sandboxes there
#                  (--sandbox-dir DIR/...). Left mounted; `umount DIR && losetup -d` ends it.
#   --size SIZE    the loop device's file (default 24G)
#
# The cap is a cgroup rule on the whole disk holding the data (cgroup v1 blkio throttle, or
# v2 io.max); COMMAND and every process it starts (the sandbox servers) run in that cgroup.
# The rule counts a read before the kernel merges neighbours: on the plain disk every 16 KiB
# page read costs one operation.
set -euo pipefail
iops=1000 bps=67108864 merging="" size=24G
while [ $# -gt 0 ]; do
	case $1 in
	--iops) iops=$2; shift 2 ;;
	--bps) bps=$2; shift 2 ;;
	--merging) merging=$2; shift 2 ;;
	--size) size=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "capped-disk.sh: unknown option $1 (see the script's header)" >&2; exit 2 ;;
	esac
done
if [ $# -eq 0 ]; then
	echo "capped-disk.sh: no command given (scripts/capped-disk.sh [--merging DIR] -- COMMAND...)" >&2
	exit 2
fi
if [ "$(id -u)" != 0 ]; then
	echo "capped-disk.sh: needs root (a cgroup rule and, with --merging, a loop device)" >&2
	exit 2
fi

# disk_of PATH: MAJ:MIN of the whole disk holding PATH (cgroup rules take whole disks).
disk_of() {
	local src parent
	src=$(df --output=source "$1" | tail -1)
	parent=$(lsblk -no pkname "$src" 2>/dev/null | head -1)
	[ -n "$parent" ] && src=/dev/$parent
	lsblk -dno MAJ:MIN "$src" | tr -d ' '
}

where=${merging:-$PWD}
if [ -n "$merging" ]; then
	mkdir -p "$merging"
	img=$(dirname "$(realpath "$merging")")/.capped-disk.img
	where=$img
	if ! mountpoint -q "$merging"; then
		[ -f "$img" ] || fallocate -l "$size" "$img"
		loop=$(losetup --direct-io=on --show -f "$img")
		dev=$(basename "$loop")
		echo mq-deadline >"/sys/block/$dev/queue/scheduler"
		echo 256 >"/sys/block/$dev/queue/max_sectors_kb"
		blkid "$loop" >/dev/null 2>&1 || mkfs.ext4 -q -F "$loop"
		mount "$loop" "$merging"
		echo "capped-disk.sh: $merging is $loop on $img (merges queued neighbouring reads)" >&2
	fi
	touch "$img"
fi
disk=$(disk_of "$where")
name=innowarm-capped-$$
if [ -d /sys/fs/cgroup/blkio ]; then
	cg=/sys/fs/cgroup/blkio/$name
	mkdir -p "$cg"
	echo "$disk $iops" >"$cg/blkio.throttle.read_iops_device"
	echo "$disk $bps" >"$cg/blkio.throttle.read_bps_device"
else
	grep -qw io /sys/fs/cgroup/cgroup.subtree_control || echo +io >/sys/fs/cgroup/cgroup.subtree_control
	cg=/sys/fs/cgroup/$name
	mkdir -p "$cg"
	echo "$disk riops=$iops rbps=$bps" >"$cg/io.max"
fi
echo "capped-disk.sh: reads of disk $disk capped at $iops/s and $bps bytes/s for: $*" >&2
echo $$ >"$cg/cgroup.procs"
trap 'echo $$ >"$(dirname "$cg")/cgroup.procs"; rmdir "$cg" 2>/dev/null || true' EXIT
"$@"
