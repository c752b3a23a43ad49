#!/usr/bin/env bash
# conformance/tests/check_forced_paths.sh — every alternative Vulkan path, forced,
# against the float64 reference.
#
# Several ops choose between kernels by shape and device (ops files' design
# comments): the default cases reach only the choice their small shapes get
# on the device at hand, so a path taken only for big shapes, or only on
# other devices, would otherwise go unchecked. Each line below forces one
# choice with its tuning knob (knobs never change results, only the kernel;
# CHAIN on a CPU device needs one llvmpipe thread, set below)
# and runs the cases of that op. Exits non-zero when any run fails.
#
#   check_forced_paths.sh VKGRAD [DEVICE]     DEVICE: vulkan (default) or N
set -uo pipefail
vkgrad=${1:?usage: check_forced_paths.sh VKGRAD [DEVICE]}
device=${2:-vulkan}
glue='add*,cont*,mul.*,neg*,repeat*,scale*,sqr*,sub*,sum*,view_back*,train_*'
fails=0
run() { # label, include, [--full (the full tier's cases)], [--long (cases of minutes)], env...
  local label=$1 include=$2 tier=() timeout=()
  shift 2
  if [ "${1-}" = --full ]; then
    tier=(--full)
    shift
  fi
  if [ "${1-}" = --long ]; then
    timeout=(--timeout 1800)
    shift
  fi
  local out rc
  out=$(env "$@" "$vkgrad" conform --device "$device" --quiet --no-determinism --time-reps 0 \
    "${tier[@]}" "${timeout[@]}" --include "$include" 2>&1)
  rc=$?
  if [ $rc -eq 0 ]; then
    echo "ok    $label"
  else
    echo "FAIL  $label (exit $rc): $*"
    echo "$out" | tail -20
    fails=$((fails + 1))
  fi
}
run "gemm: transpose pre-pass on every plan" 'out_prod*,mul_mat*' VKGRAD_TUNING=gemm.transpose=always
run "gemm: big kernels only" 'out_prod*,mul_mat*' VKGRAD_TUNING=gemm.mid=0,gemm.small=0,gemm.split=0
run "gemm: the 128x128 big kernel only" 'out_prod*,mul_mat*' \
  VKGRAD_TUNING=gemm.big=128x128,gemm.mid=0,gemm.small=0,gemm.split=0
run "cross entropy: streaming kernels" 'cross_entropy*,train_xent*' VKGRAD_TUNING=xent.rows=0
run "cross entropy: rows past registers streamed (tiny sizes)" 'cross_entropy_loss_back*' \
  VKGRAD_TUNING=xent.tail=always,xent.tail_wg=32,xent.tail_cache=2,xent.tail_batch=3
run "conv: persistent 16-byte kernel, d_c by a second pass" 'ssm_conv*' \
  VKGRAD_TUNING=conv.kernel=vec_persistent
run "conv: persistent, 3 workgroups (row blocks split over several)" 'ssm_conv*' \
  VKGRAD_TUNING=conv.kernel=vec_persistent,conv.workgroups=3
run "conv: persistent, d_c summed in the same dispatch (one sequence)" 'ssm_conv*' \
  VKGRAD_TUNING=conv.kernel=vec_persistent_fused
run "conv: persistent fused, 3 workgroups" 'ssm_conv*' \
  VKGRAD_TUNING=conv.kernel=vec_persistent_fused,conv.workgroups=3
run "conv: persistent fused, a workgroup per unit (more slots than loaded together)" 'ssm_conv*' \
  VKGRAD_TUNING=conv.kernel=vec_persistent_fused,conv.workgroups=64
run "conv: 16-byte kernel, 256-position steps" 'ssm_conv*' VKGRAD_TUNING=conv.kernel=vec_256
run "conv: 16-byte kernel, 256-position steps, chunks of several steps" 'ssm_conv*' \
  VKGRAD_TUNING=conv.kernel=vec_256,conv.workgroups=1
run "conv: 16-byte kernel, 128-position steps" 'ssm_conv*' VKGRAD_TUNING=conv.kernel=vec_128
run "conv: generic walk at d_conv 4" 'ssm_conv*' VKGRAD_TUNING=conv.kernel=walk
run "scan Mamba-2: chunked recurrence" 'ssm_scan_back.mamba2*' VKGRAD_TUNING=scan.ssd_path=off
run "scan Mamba-2: matrix form at every length" 'ssm_scan_back.mamba2*' VKGRAD_TUNING=ssd.min_tokens=1
run "scan Mamba-2: matrix form, mid layout" 'ssm_scan_back.mamba2*' VKGRAD_TUNING=ssd.min_tokens=1,ssd.layout=mid
run "scan Mamba-2: matrix form, big layout (wide phase 2 where Q 64 fits)" 'ssm_scan_back.mamba2*' \
  VKGRAD_TUNING=ssd.min_tokens=1,ssd.layout=big
run "scan Mamba-2: big layout, SSD_CARRY's two walks apart" 'ssm_scan_back.mamba2*' \
  VKGRAD_TUNING=ssd.min_tokens=1,ssd.layout=big,ssd.carry_split=1
run "scan Mamba-2: scalar rows (the grid where vec4 rows do not fit), every layout" 'ssm_scan_back.mamba2*' \
  VKGRAD_TUNING=ssd.min_tokens=1,ssd.vec4=0
run "scan Mamba-2: cross-head sums, small (split) layout" 'ssm_scan_back.mamba2*' \
  VKGRAD_TUNING=ssd.min_tokens=1,ssd.layout=small,ssd.cross_heads=sums
run "scan Mamba-2: cross-head sums, big layout" 'ssm_scan_back.mamba2*' \
  VKGRAD_TUNING=ssd.min_tokens=1,ssd.layout=big,ssd.cross_heads=sums
run "scan Mamba-2: cross-head state terms, big layout" 'ssm_scan_back.mamba2*' \
  VKGRAD_TUNING=ssd.min_tokens=1,ssd.layout=big,ssd.cross_heads=terms
run "scan Mamba-2: cross-head state terms, heads split over two workgroups" 'ssm_scan_back.mamba2*' \
  VKGRAD_TUNING=ssd.min_tokens=1,ssd.layout=big,ssd.cross_heads=terms,ssd.head_splits=2
run "scan Mamba-2: cross-head state terms, one workgroup per group, scalar rows" 'ssm_scan_back.mamba2*' \
  VKGRAD_TUNING=ssd.min_tokens=1,ssd.layout=big,ssd.cross_heads=terms,ssd.head_splits=1,ssd.vec4=0
run "scan Mamba-2: cross-head state terms, SSD_CARRY's two walks apart" 'ssm_scan_back.mamba2*' \
  VKGRAD_TUNING=ssd.min_tokens=1,ssd.layout=big,ssd.cross_heads=terms,ssd.carry_split=1
# CHAIN's waits on CPU devices: one llvmpipe thread runs workgroups one
# after another in ticket order, so no wait can pass its loop budget.
run "scan Mamba-2: SSD_SUM walks the chunks itself (CHAIN), every sequence length" 'ssm_scan_back.mamba2*' \
  VKGRAD_TUNING=ssd.min_tokens=1,ssd.chain=1 LP_NUM_THREADS=1
run "scan Mamba-2: CHAIN with the cross-head state terms, big layout" 'ssm_scan_back.mamba2*' \
  VKGRAD_TUNING=ssd.min_tokens=1,ssd.layout=big,ssd.cross_heads=terms,ssd.chain=1 LP_NUM_THREADS=1
run "scan Mamba-1: chunked recurrence" 'ssm_scan_back.mamba1*' VKGRAD_TUNING=scan.chan_path=off
run "scan Mamba-1: channel path at every size" 'ssm_scan_back.mamba1*' VKGRAD_TUNING=chan.min_tokens=1
# The default cases have at most 40 channels, one block of the walk: the
# full tier's 1536 channels in two chunks give the default layout for big
# nodes (several channel blocks, the walk's workgroups of 256 invocations).
run "scan Mamba-1: channel path, 1536 channels in two chunks" \
  'ssm_scan_back.mamba1.d_state=16.head_dim=1.n_head=1536*' --full \
  VKGRAD_TUNING=chan.min_tokens=1,chan.chunk_tokens=32
run "norm: shared-memory reductions, rows past 64 x 2 values streamed" 'rms_norm*,norm*' \
  VKGRAD_TUNING=norm.sg=0,norm.wg=64,norm.cache=2
run "norm: subgroup reductions, rows past 64 values streamed" 'rms_norm*,norm*' \
  VKGRAD_TUNING=norm.wg=64,norm.cache=1
run "norm: scalar loads on contiguous rows" 'rms_norm*,norm*' VKGRAD_TUNING=norm.vec4=0
run "softmax: scalar loads on contiguous rows" 'soft_max*' VKGRAD_TUNING=softmax.vec4=0
run "softmax: shared-memory reductions, rows past 64 x 2 keys streamed" 'soft_max*' \
  VKGRAD_TUNING=softmax.sg=0,softmax.wg=64,softmax.cache=2
run "softmax: subgroup reductions, rows past 64 keys streamed" 'soft_max*' \
  VKGRAD_TUNING=softmax.wg=64,softmax.cache=1
# SSM_SCAN_BACK in passes (segments of tokens over blocks of heads), forced
# on the default cases (every path inside a pass, shared and permuted ids,
# groups split into blocks), then where the device needs them: each form at
# the longest sequence whose tensors fit its binding, and Nemotron's heads at
# 1024 tokens (passes on a 128 MiB binding; minutes on lavapipe).
run "scan: passes of at most 48 tokens and 5 heads" 'ssm_scan_back*,train_scan*' \
  VKGRAD_TUNING=scan.split_tokens=48,scan.split_heads=5
run "scan: passes of 3 tokens over single heads (short cases)" \
  'ssm_scan_back*n_seqs=3*,ssm_scan_back*n_tok=7.*,ssm_scan_back*dt=high' \
  VKGRAD_TUNING=scan.split_tokens=3,scan.split_heads=1
run "scan: the longest sequences whose tensors fit a binding" \
  'ssm_scan_back.mamba2.d_state=16.head_dim=4.n_head=4.n_group=2.*.n_seqs=2.n_slots=3,ssm_scan_back.mamba1.d_state=16.head_dim=1.n_head=8.n_group=1.*,ssm_scan_back.mamba2.d_state=128.head_dim=80.n_head=128.*' \
  --full --long
run "glue: barriers only where needed, profiled too" "$glue" VKGRAD_TUNING=record.barrier=deps
run "glue: no fused chains, two-pass VIEW_BACK and SUM" "$glue" \
  VKGRAD_TUNING=glue.fuse=0,glue.view_passes=2,glue.sum_one_max=0
# A workgroup per output where one invocation per output is the default
# (not the 771 K-output unbroadcast: 20 s on lavapipe that way).
run "glue: sums down to a shape, a workgroup per output" \
  'sum*,repeat_back.*.ne0=?.*,repeat_back.*.ne0=64.*,train_*' VKGRAD_TUNING=glue.per_invocation_max=-1
run "rope: one invocation per token; optimizer steps: one item per invocation" 'rope*,opt_step*,clip_grad*' \
  VKGRAD_TUNING=rope.wg=1,optim.wg=64,optim.per_inv=1
run "rope: workgroups of up to 1024; optimizer steps: 16 items per invocation" 'rope*,opt_step*,clip_grad*' \
  VKGRAD_TUNING=rope.wg=1024,optim.wg=1024,optim.per_inv=16
run "activations: element by element only" 'silu*,gelu*,softplus*,exp*' VKGRAD_TUNING=act.vec4=0
run "embeddings: scalar rows, one table row per workgroup, one column group" 'get_rows*' \
  VKGRAD_TUNING=get_rows.vec4=0,get_rows.rows=1,get_rows.cpg=1
[ $fails -eq 0 ] || { echo "$fails forced-path run(s) failed" >&2; exit 1; }
