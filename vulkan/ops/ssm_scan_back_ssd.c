/* ops/ssm_scan_back_ssd.c — SSM_SCAN_BACK, Mamba-2 form, in the chunked
 * matrix ("state space duality") form (see ssm_scan_paths.h for the hook).
 *
 * Kernels: shaders/ssm_scan_back_ssd.comp (the math is in its header
 * comment). Dispatches, barriers between dependent ones:
 *   SSD_SUM    chunk summaries, a workgroup per (sequence, head, chunk,
 *              64 x 64 tile of the N x P summary); with CHAIN (its own
 *              build, big grids on NVIDIA) it also walks the chunks: the
 *              workgroup of a tile's k-th position forms S of chunk k and
 *              R of chunk nc - 1 - k, waits for position k - 1's states
 *              (a count per chain), and writes the next ones, so
 *              SSD_CARRY does not run;
 *   SSD_KMAT   (with SSD_SUM) K = C B^T per (sequence, group, chunk);
 *   SSD_CARRY  (without CHAIN) an invocation per (sequence, head, n, p)
 *              walks the chunks (the only serial part: n_tok / Q steps),
 *              or with CSP two, one walking them forward, one backward;
 *   SSD_MAIN   a workgroup per (sequence, head, chunk), or per chunk and
 *              n / p tile when split: the Q x Q products, then d_B, d_C,
 *              d_x by register-blocked products from shared memory, d_x and
 *              d_dt written directly (split: d_dt parts to scratch);
 *   SSD_XC     (XS: bigger grids, see SSD_XS_C64; after SSD_CARRY) the
 *              state terms of d_C and d_B summed over a group's heads and
 *              each head's d_l dots: SSD_MAIN then leaves its phase 2 out;
 *   SSD_WSUM   (XH: big grids, see SSD_XH_C64) W = sum over a group's
 *              heads of M o Sg, an invocation per element;
 *   SSD_XSUM   (XH) W B and W^T C, a workgroup per (sequence, group, chunk,
 *              d_C or d_B, 32 columns of n): the terms of d_C and d_B that
 *              SSD_MAIN leaves out with XH, once per group, not per head;
 *   SSD_REDUCE d_s, d_A, d_B, d_C from the partials, in a fixed order.
 * Sequences of one chunk skip SSD_CARRY: SSD_SUM writes a_0 lambda_0 and
 * SSD_MAIN reads s and g_S, so those two run together. No atomic ever adds
 * a value: the op is deterministic (CHAIN's atomic counts only order the
 * workgroups; each state is the same fma of the same operands as in
 * SSD_CARRY, whichever workgroup runs when). Scratch is bounded by the chunk count (2 N x P
 * summaries per chunk and head, with XH also Q x Q per chunk and head)
 * plus the per-head d_B / d_C partials (2 x n_head x n_tok x N per
 * sequence).
 *
 * Defaults (chosen by grid size in vkg_vk_scan_back_ssd) and H200
 * timings (d_state 128, head_dim 64, 1 group; GPU timestamps):
 *   64 heads x 4096 tokens: Q = 64, vec4 rows, K once per group, k-step 8,
 *     and (since round 4) the wide phase 2 (P2W), 8 x 4 blocks of
 *     invocations per subgroup (WMAP), k-step 16 in phases 1 and 3 (K2),
 *     masked k-steps skipped (TRI), SSD_CARRY with 16 chunks of loads in
 *     flight (CG = 16): 2.84 ms (was 3.04; chunked recurrence 7.80 ms;
 *     stages SUM + KMAT 0.55, CARRY 0.158 with CG = 8 (was 0.197), MAIN
 *     2.03 (was 2.24), REDUCE ~0.08 ms); 64 heads x 1024: 0.786 ms (was
 *     0.82, recurrence 1.96 ms);
 *   16 heads x 256 tokens: Q = 32, k-step 16: 0.087 ms (recurrence 0.165);
 *   16 heads x 64 tokens (the demo): split, K per head: 0.053 ms
 *     (recurrence 0.058).
 * Measured slower: Q = 32 at 4096 tokens (3.27-4.04 ms), 32 x 32 or
 * 32 x 16 invocations (demo 0.124 vs 0.104 ms), tiles fetched after each
 * k-step instead of during it (4.27 vs 3.88 ms), SSD_SUM k-step 16 (0.73
 * vs 0.57 ms), SSD_SUM with 8 x 4 blocks of both S and R per invocation
 * and vec4 loads of both operands (0.81 vs 0.55 ms), WMAP + K2 + TRI
 * without P2W (MAIN alone 2.17 ms, but the op 10.2 ms; demo shape 0.225
 * ms), P2S (11.9 ms). Every loop over a register array is marked
 * [[unroll]] (common/ops_ssm_scan_ssd.glsl): without the marks this
 * driver left some of them rolled and SSD_MAIN took 8.78 ms. SSD_MAIN
 * reaches only ~15 TFLOP/s: halving its shared-memory loads per FMA (P2W,
 * WMAP) and its barriers (K2) gained 10%, so the bound is elsewhere (its
 * global loads of s_in / lam from memory, one k-step ahead, with one or two
 * workgroups per SM is the likely one).
 * Round 6 (H200, alternating runs of the same visit; registers and binary
 * size from the driver's statistics): each chunk's cumulative log decay
 * summed by every invocation for its own token in index order (bitwise the
 * serial sum) instead of by one invocation: 64 heads x 4096 tokens
 * 2.79-2.85 ms against 2.82-2.85, 1024 tokens 0.777-0.781 against
 * 0.782-0.787 (kept). Measured and not kept: SSD_MAIN's epilogue sums
 * unrolled, in the same order, and the <lam, s_in> sum moved to another
 * warp (241 registers as before, binary 135 -> 143 KB): 3.03-3.21 ms;
 * with that, s_in and lam fetched into L2 by one scalar load per line
 * while phase 1 runs: 3.17-3.39; the k-step loops of SSD_SUM and SSD_MAIN
 * marked [[dont_unroll]] (the driver unrolled them all the same: same
 * size, same time), then given a bound the compiler cannot see (rolled:
 * SSD_MAIN 183 registers, 116 KB, still one workgroup per SM): 3.26 ms
 * against 2.88; SSD_SUM as one product per workgroup (S or R), 8 x 4
 * blocks over 128 rows of n, both operands vec4 (3 16-byte loads per 32
 * FMA instead of 8 scalar and 2 16-byte), the p-side tile staged once per
 * chunk (79 registers): 2.98-3.02 ms against 2.84-2.89, and the same
 * with 16-token k-steps (127 registers) 3.03-3.10. SSD_MAIN's time moves
 * with changes far from its inner loops (an epilogue run once per
 * workgroup), so its bound is not the FMA or shared-memory pipes; the
 * driver's statistics do not say what it is. Q is 32 where 64 does not fit
 * shared memory (lavapipe's 32 KiB). The path declines the node (returns
 * false) for Mamba-1, when no layout fits, when a scratch binding would
 * pass maxStorageBufferRange or 32-bit indexing, and on CPU devices when a
 * serial loop would pass llvmpipe's loop budget.
 *
 * Round 7, XH (cross-head sums; B and C are shared by the heads of a
 * group): SSD_MAIN no longer computes (M o Sg) B and (M o Sg)^T C per head
 * (a third of its FMAs) but writes M o Sg; SSD_WSUM sums it over the
 * group's heads and SSD_XSUM multiplies the sum by B and C once per group.
 * H200, 64 heads x 4096 tokens, alternating runs: 2.60-2.61 ms against
 * 2.79-2.88 (stages: SSD_MAIN 2.05 -> 1.77-1.80, SSD_WSUM 0.025, SSD_XSUM
 * 0.038; a first SSD_XSUM that summed W itself, one load in flight per
 * invocation, took 0.167); 1024 tokens 0.757-0.770 against 0.785-0.789;
 * slower where the grid is small (two more dispatches and barriers: 16
 * heads x 64 tokens 0.081 against 0.053, x 256 tokens 0.098 against
 * 0.087; 64 heads in 2 groups x 256 tokens 0.260 against 0.235), so on
 * from 1024 chunk-heads of 64 tokens (SSD_XH_C64). SSD_MAIN keeps 241
 * registers. Measured with XH and not kept: SSD_MAIN's exclusive prefix of F summed in
 * parallel (bitwise the same) 2.610-2.618 against 2.595-2.604; k-step 16,
 * TRI off, K2 off: 2.61-2.63 (equal or slower); 512 invocations (the
 * driver fits 115 registers) SSD_MAIN 2.03 ms, 1024 (64 registers) 2.37;
 * the 16 x 16 vec4 kernel without P2W (161 registers) 1.89, with WMAP, K2
 * and TRI (173 registers) 1.85 (its first timed run read 3.89 ms for the
 * op, round 4's 10.2: the driver's first build of a kernel on a machine,
 * see reports/nvidia-h200/speed.md round 5 -- run in two processes, the
 * first read 8.70 ms and the second 2.70); SSD_SUM with every n tile of a
 * chunk in one workgroup (the chunk setup once; 79 registers): op
 * 2.627-2.637 against 2.645-2.651, but its dispatch 0.597 against 0.548,
 * so not kept; two heads of a chunk per SSD_MAIN workgroup, one after the
 * other, their d_B / d_C partials added in place (half the partials):
 * 2.87-2.91 ms against 2.60-2.61 (SSD_MAIN 2.12 against 1.78, 239
 * registers, and SSD_REDUCE only 0.075 -> 0.069: it is not bound by the
 * partials' bytes). Kept after the report run: SSD_XSUM register-blocked
 * over a workgroup per 32 columns (0.038 -> 0.033 ms), and the <lam,
 * s_in> sum of SSD_MAIN's epilogue by 16 otherwise idle invocations
 * instead of one adding all 256 partials (binary 126 -> 119 KB):
 * 2.585-2.598 against 2.611-2.619 ms, 1024 tokens 0.733-0.737 against
 * 0.742-0.745; then F's exclusive prefix and the chunk's d_A sum in two
 * levels of 16 invocations (not bitwise the serial sums): 2.571-2.575
 * against 2.582-2.588 ms, 1024 tokens 0.729-0.731 against 0.734-0.736
 * (the d_A sum alone measured equal). Where SSD_MAIN's time goes (a timing-only build that left
 * loops out, results wrong, not kept; 1.797 ms in all): phase 1's Sg
 * 0.164, phase 2's two products with s_in / lam 0.397, phase 3's B lam
 * 0.232 and (M o K)^T G 0.085; without all four, 0.652 ms remain: the
 * chunk setup, K, F, the exps of M, the B / C loads of the d_l dots, the
 * partials' stores and the epilogue, at one workgroup per SM. The
 * (M o Sg)-free SSD_MAIN's products run at ~15 TFLOP/s on 2.1 M FMA per
 * chunk and head (4096 workgroups on 132 SMs: 32 rounds, the last of 4).
 * Round 8: SSD_SUM's summaries, SSD_MAIN's d_B / d_C partials, M o Sg and
 * d_x stored as 16-byte row pieces where whole and aligned (the scalar
 * epilogues wrote a quarter of each 32-byte sector per store; same values):
 * 64 heads x 4096 tokens 2.562-2.572 -> 2.421-2.428 ms, 1024 tokens
 * 0.729-0.730 -> 0.664-0.665 (SSD_SUM 0.545 -> 0.500, SSD_MAIN 1.744 ->
 * 1.627). Measured and not kept: the summaries as one product per chunk
 * and role over all the heads of a group (columns h * P + p, operands B
 * or C and the scaled x or g_y, 128 x 128 tiles, 8 x 8 per invocation, 126
 * registers, the per-token factors from a small kernel first): 0.518 +
 * 0.010 ms against SSD_SUM's 0.506 in the same visit.
 * Round 9: the fetches of SSD_SUM and SSD_MAIN keep the loaded values and
 * their staging scales them (x by dt', B and C by the decays): scaled in
 * the fetch, each load was waited for right there. SSD_SUM's first fetch
 * goes before the chunk setup. 64 heads x 4096 tokens 2.446-2.448 ->
 * 2.116-2.119 ms (SSD_SUM 0.506 -> 0.367, SSD_MAIN 1.648 -> 1.457), 1024
 * tokens 0.674 -> 0.587-0.590. Timing-only builds (results wrong) had
 * shown the bound: SSD_MAIN with its s_in / lam loads from a 1 KB hot
 * window 1.495 ms, with every input load so 1.131, against 1.636.
 * Measured and not kept: SSD_MAIN's other first fetches issued before the
 * work preceding them (2.118-2.124 against 2.116-2.119); its phase 2 with
 * operands two k-steps ahead in two register sets (243 registers, no
 * spill: SSD_MAIN 1.737 against 1.457 ms); SSD_SUM and
 * SSD_CARRY as one kernel walking the chunks with a 64 x 64 state tile in
 * registers (256 workgroups: 0.83-1.12 ms against 0.66, any prefetch depth
 * or k-step), or as summaries over 1-8 chunks per workgroup (0.53-0.55
 * against 0.50 before the fetch change).
 * Knobs (read at each encode; every setting gives correct results):
 * VKG_TUNE_SCAN_SSD=0 (this path off: the chunked recurrence of
 * ops/ssm_scan.c runs), VKG_TUNE_SSD_MINTOK=N (shortest sequence taken,
 * default 16), VKG_TUNE_SSD_Q=32|64, VKG_TUNE_SSD_KT=8|16
 * (SSD_MAIN's k-step), VKG_TUNE_SSD_WG=512|1024
 * (SSD_MAIN on 32 x 16 or 32 x 32 invocations instead of 16 x 16),
 * VKG_TUNE_SSD_V4=0 (SSD_MAIN with strided rows read as scalars instead
 * of contiguous rows read as vec4), VKG_TUNE_SSD_KPRE=0|1 (K = C B^T once
 * per group by SSD_KMAT, or once per head in SSD_MAIN),
 * VKG_TUNE_SSD_SPLIT=0|1 (SSD_MAIN as a workgroup per n tile of d_B / d_C
 * and per p tile of d_x of each chunk, their d_dt / d_A parts added by
 * SSD_REDUCE: more workgroups for small grids), VKG_TUNE_SSD_PF=0 (tiles
 * fetched after each k-step), VKG_TUNE_SSD_P2W=0|1 (SSD_MAIN's phase 2 in
 * 8 x 4 blocks of d_C and of d_B over 128 columns; the vec4 16 x 16 grid at
 * Q = 64 with SSD_KMAT, unsplit), VKG_TUNE_SSD_P2S=1 (with P2W: that phase
 * as two passes, d_C then d_B, half the accumulators), VKG_TUNE_SSD_WMAP=0|1
 * (vec4 grids: 8 x 4 blocks of invocations per 32), VKG_TUNE_SSD_K2=0|1
 * (phases 1 and 3 at k-step 2 KT), VKG_TUNE_SSD_TRI=0|1 (with WMAP: skip
 * the k-steps the causal mask zeroes), VKG_TUNE_SSD_CG=1|4|8|16
 * (SSD_CARRY's chunks per group of loads in flight), VKG_TUNE_SSD_CSP=0|1
 * (with CG >= 4: SSD_CARRY's forward and backward walks in invocations of
 * their own; default from 4 CG chunks), VKG_TUNE_SSD_XH=0|1
 * (the cross-head sums; default: from SSD_XH_C64 chunk-heads),
 * VKG_TUNE_SSD_XS=0|1 (the cross-head state terms, with XH; default: from
 * SSD_XS_C64 chunk-heads), VKG_TUNE_SSD_NXS=N (SSD_XC's workgroups per
 * group: the heads split N ways),
 * VKG_TUNE_SSD_XV4=0|1 (SSD_XC's tiles as 16-byte pieces where aligned),
 * VKG_TUNE_SSD_XSH=0|1 (SSD_XC's row dots by subgroup shuffles),
 * VKG_TUNE_SSD_XWG=256|512 (SSD_XC's invocations: 512, the default
 * since round 19, splits a chunk's rows over two groups of 8 warps where Q
 * is a multiple of 64), VKG_TUNE_SSD_XCR=0|1 (SSD_XC's C / B row pieces
 * in registers, not shared memory; default with 512), VKG_TUNE_SSD_XKT=
 * 8|16|32 (32 with XCR only; the default then),
 * VKG_TUNE_SSD_GK=0|1 (with XS: SSD_MAIN keeps G in shared memory from
 * phase 1 for phase 3; on by default since round 17), VKG_TUNE_SSD_L4=0|1
 * (phase 3's lam and s_in tiles as 16-byte pieces; on by default since
 * round 18), VKG_TUNE_SSD_CHAIN=0|1 (SSD_SUM walks the chunks, no
 * SSD_CARRY; default on NVIDIA from SSD_CHAIN_MIN chains on big grids; on
 * CPU devices correct with one llvmpipe thread, LP_NUM_THREADS=1, as the
 * forced-path test runs it: with more, a wait may pass llvmpipe's loop
 * budget and the results are then NaN, never quietly wrong),
 * VKG_TUNE_SSD_KEA=0|1 (with SSD_KMAT: SSD_MAIN loads K before the chunk
 * setup; default with the wide kernel since round 21). (The
 * per-stage times above were taken with a timing-only knob that left stages out; as its
 * results were wrong it is not kept.)
 *
 * Round 14, XS (cross-head state terms, round 6's sketch built): with XH,
 * SSD_MAIN's phase 2 holds only the per-head state terms G s_in^T (d_C)
 * and XD lam^T (d_B) and the d_l dots C.(G s_in^T) and B.(XD lam^T).
 * SSD_XC forms the state terms summed over a group's heads as long-k
 * products (k = head x p, a workgroup per chunk, d_C or d_B and split of
 * the heads), each head's product in registers, dotted with C / B, then
 * scaled into an accumulator in shared memory by SSD_SUM's per-token
 * factors; SSD_MAIN leaves phase 2 out and reads the dots, and sums
 * <lam, s_in> from s_in fetched beside lam in phase 3; SSD_REDUCE adds the
 * splits' partials instead of 64 heads' (268 MB at 4096 tokens). H200,
 * 64 heads x 4096 tokens, alternating runs of one visit: the op
 * 2.069-2.073 against 2.099-2.105 ms (SSD_MAIN 1.445 -> 0.860 ms at 129
 * registers instead of 241, SSD_REDUCE 0.075 -> 0.013, SSD_XC 0.638);
 * 64 heads x 1024 tokens 0.585 against 0.574 and 24 heads x 1024 x 8
 * sequences 1.64 against 1.62 (slower), so on from SSD_XS_C64. SSD_XC runs
 * at ~13 TFLOP/s (8.6 GFLOP), where OUT_PROD's kernel reaches 33 on a GEMM
 * of the same size. Timing-only builds (results wrong): without its dots
 * 0.506 ms, without its tile loads 0.471, with 1 of 16 k per step 0.477:
 * neither the FMAs nor the loads alone bound it. Measured and not kept:
 * the accumulator and C / B in registers with a chunk setup per head (181
 * registers: XC 0.669 ms), the accumulator in registers with C / B in
 * shared memory (147 registers at k-step 8: 0.637; 172 at 16: 0.606, the op
 * 2.035-2.047 against 2.103-2.116, the fastest measured: it returns next,
 * with a report run of its own), k-step 8 here (the op 2.165 against
 * 2.079), the heads' k-steps walked as one sequence with the dots as 32
 * partials per token to scratch (no barrier per head; 133 registers: XC
 * 0.737, SSD_MAIN 0.999 adding the partials), 2 column groups per
 * invocation on 128 invocations (205 registers: 0.805). Without the
 * <lam, s_in> fetch SSD_MAIN takes 128 registers and 0.815 ms (timing-only).
 *
 * Round 15, SSD_XC rebuilt: each head's product and the accumulator in
 * registers, C / B staged once per workgroup; the k-steps of all the
 * split's heads one pipeline (the next head's first tiles in flight during
 * a head's last k-step); the row dots summed over a warp's 4 column groups
 * by two subgroup shuffles and over the 8 warps during the next head's
 * first k-step (no barrier of their own; XSH 0, shared memory and 4
 * barriers per head, where shuffles are missing). H200, alternating runs:
 * SSD_XC 0.642 -> 0.499 ms at 2 splits, 165 registers; the op at 64 heads x
 * 4096 tokens 2.081-2.084 -> 1.929-1.931, at 1024 tokens 0.590 -> 0.566, at
 * 24 heads x 1024 x 8 sequences 1.640 -> 1.530 (without XS 2.098, 0.573,
 * 1.607: XS now on from 1024 chunk-heads). Splits (the op, ms): 4096
 * tokens 1 / 2 / 4: 1.904 / 1.919 / 1.953; 1024 tokens 1 / 4 / 8: 0.870 /
 * 0.542 / 0.560; 24 x 1024 x 8 1 / 4: 1.519 / 1.617: so about 128
 * workgroups (SSD_XC_WGS), one per SM. Shuffled or shared-memory dots 0.499
 * / 0.501 ms, 16-byte or scalar tile loads 0.499 / 0.506 (both kept, the
 * first of each by default). Measured and not kept: k-step 8 (0.612), 2
 * column groups per invocation on 128 invocations (255 registers: 0.565-0.650
 * at 1 to 4 splits). A first build with the shuffles inside the loop over
 * rows put the product, accumulator and factors in local memory (the driver
 * did not unroll it: 4.63 ms), hence the rows written out. With XS,
 * timing-only builds of SSD_MAIN (0.851 ms): without phase 1 0.748, without
 * phase 3 0.399, without the serial d_l sums 0.813, without phase 3's
 * (M o K)^T G 0.758: phase 3's B lam (k = d_state) is the largest piece.
 * SSD_XC (0.480 ms) timing-only: with 1 of 16 k per step 0.348, without
 * its tile loads 0.302 (load latency: one k-step of 12 KB in flight per
 * SM). Measured and not kept: the C / B rows read at each head's end
 * instead of staged (0.595) and, with that room, k-step 32 (0.528); two
 * k-steps of tiles in flight in two register sets, the heads' k-steps as
 * one flat sequence (190 registers: 0.499, the op 1.930 against 1.914-1.918).
 * See speed.md round 15 for the next steps.
 *
 * Round 16-17, GK (on by default): with XS, SSD_MAIN's M o Sg array is
 * not read after phase 1, so the chunk's G (Q x head_dim), staged by phase
 * 1 anyway, stays there for phase 3's (M o K)^T G: no G fetches (16 KB per
 * chunk and head) and none of that loop's 8 barriers. SSD_MAIN 0.859 ->
 * 0.802 ms, the op 1.920 -> 1.860 at 64 heads x 4096 tokens, 3% at 64 x
 * 1024 and 24 x 1024 x 8 too, although its register count rose from 127
 * to 140 (one workgroup per SM instead of two). The 13 come from F's
 * partials in the staging: a timing-only build with them in the old
 * arrays held 127 and ran no faster (0.795 against 0.794 ms), so that
 * occupancy does not bound SSD_MAIN. Measured and removed: BL, a
 * kernel SSD_BL beside SSD_XC forming phase 3's B lam (k = d_state) for a
 * block of a group's heads as one product (8 x 8 blocks per invocation,
 * 166 registers at 128 invocations) and each head's <lam, s_in>, read
 * back by SSD_MAIN. SSD_MAIN fell by 0.233 ms, but SSD_BL took 0.251-0.260
 * (its dots summed in the k-steps or after them; 0.295 on 256
 * invocations): it moves B lam through memory (64 MB each way) and reads
 * lam and s_in (256 MB). Timing-only builds: without its tile loads 0.143,
 * with 1 of 16 k per step 0.174. The op: -0.4% at 64 x 4096, +3.3% at
 * 64 x 1024, -0.1% at 24 x 1024 x 8; see speed.md round 17. Timing-only
 * builds of SSD_MAIN with GK (0.802 ms): without phase 3's B lam k-steps
 * 0.480, with their tiles fetched for the first k-step only 0.661, with
 * 1 of 16 k per step 0.935 (slower: the loads' latency is then not hidden
 * at all). The loop waits on its loads; more in flight per workgroup is
 * the next step.
 *
 * Round 18: L4 on (above). More k-steps of phase 3's B lam in flight, each
 * in its own register set: sets picked by a loop index went to local
 * memory (SSD_MAIN 0.90 ms), sets named by constants ran at 0.793 / 0.784
 * / 0.786 / 0.786 ms for 1-4 sets: not kept. But that first form, at one
 * set, ran SSD_MAIN at 0.708 ms against 0.786 for the same operations in
 * the plain loop (the op 1.836 -> 1.759 ms; 64 x 1024 0.523 -> 0.504, 24 x
 * 1024 x 8 1.467 -> 1.410), and neither its loop alone nor its
 * two-level arrays alone did: the shader keeps that form (NSET, with the
 * measurements). Phase 1's G / XD loop in the same form, after the report
 * run: SSD_MAIN 0.709 -> 0.694 ms, 128 registers, the op 1.759 -> 1.744
 * (64 x 1024 0.505 -> 0.501, 24 x 1024 x 8 1.410 -> 1.397); SSD_SUM's loop
 * in it 0.343 -> 0.342, not kept. speed.md round 18 has the tables.
 *
 * Round 19: SSD_XC on 512 invocations, a chunk's rows in two groups of 8
 * warps (4 rows x 4 columns each): 165 -> 101 registers, 8 -> 16 warps
 * per SM, SSD_XC 0.480 -> 0.428 ms, the op 1.733 -> 1.683 at 64 x 4096
 * (64 x 1024 0.498 -> 0.482, 24 x 1024 x 8 1.391 -> 1.343). SSD_SUM's
 * fetch in two loops (B / C, x / g_y): 0.343 -> 0.333. Then on 512 the
 * C / B rows in registers (XCR) and a k-step of 32 in the shared memory
 * that frees: SSD_XC 0.433 -> 0.408 ms (126 registers), the op 1.710 ->
 * 1.684 (0.490 -> 0.479, 1.366 -> 1.337). Measured and not
 * kept: SSD_XC's k-steps in SSD_MAIN's register-set form (0.481 -> 0.569
 * on 256 invocations, 0.482 on 512); on 512, 2 head splits (0.435) or
 * k-step 8 (0.614); SSD_SUM with two n tiles per workgroup of 512 (95
 * registers, 0.433: one workgroup per SM instead of three). Also measured
 * and not kept: SSD_XC's C / B rows in registers at a k-step of 16 (0.427)
 * or double-buffered staging (0.425) against the k-step of 32 (0.408);
 * SSD_SUM at a k-step of 16 (0.373), its two products as [2][..] arrays
 * (0.396), in workgroups of their own (0.411 at 39 registers; 0.824 / 0.531
 * with the chunk staged at once / in two k-steps); SSD_MAIN reading the
 * chunk setup from SSD_SUM (0.702 -> 0.701). speed.md round 19 has the
 * tables.
 *
 * Round 20: where SSD_MAIN's phase 3 B lam loop spends its time (timing-
 * only builds, results wrong; SSD_MAIN 0.695 ms at 64 heads x 4096
 * tokens): without the loop (no fetches, no dots) 0.472, without its FMAs
 * (fetches, stores and barriers kept) 0.672, without the s_in fetch and
 * the <lam, s_in> dot 0.678: the loop waits on its staged loads. SSD_XC
 * without its FMAs: 0.406 -> 0.157. Measured and not kept: the loop with
 * no staging, each invocation loading its B^T / lam pieces straight from
 * memory 2-8 n ahead (SSD_MAIN 1.57-1.83 ms); <lam, s_in> summed by
 * SSD_CARRY (s_in read again, subgroup sums per chunk: SSD_CARRY 0.159 ->
 * 0.191, SSD_MAIN only 0.702 -> 0.678); SSD_BLAM, B lam of a block of 1-8
 * heads per workgroup with B's chunk rows staged once, <lam, s_in> beside
 * (81 registers): SSD_MAIN 0.702 -> 0.568 (reading the product back), but
 * the op 1.685 -> 1.93-1.98 ms (as round 17's SSD_BL: moving lam, s_in and
 * the product through memory costs more than the loop). Kept: phase 1's
 * and phase 3's first tiles fetched before the chunk setup and before M o K
 * is formed (SSD_MAIN 0.694 -> 0.684 for phase 3's), CSP (SSD_CARRY
 * 0.159 -> 0.151 at 64 chunks; 24 heads x 1024 tokens x 8 sequences, 16
 * chunks, 1.320 -> 1.326 with it, so only from 4 CG chunks), and with XS
 * M o K stored from the registers phase 1 left it in, not formed again from
 * K loaded again (SSD_MAIN 0.684 -> 0.660 ms, 126 registers). The op 1.685
 * -> 1.635 ms at 64 x 4096 in one visit (64 x 1024 0.481 -> 0.470, 24 x
 * 1024 x 8 1.340 -> 1.311). speed.md round 20 has the tables.
 *
 * Round 21, CHAIN: SSD_CARRY read 268 MB of summaries and wrote 268 MB of
 * states (0.152 ms, 84% of the copy probe): its walk is now done by
 * SSD_SUM, in a chain per (sequence, head, n tile, p tile) whose
 * positions pass the states through L2. Tickets (an atomic count at each
 * workgroup's start) give the positions, so a workgroup waits only on one
 * that started before it. H200, 64 heads x 4096 tokens, same visits:
 * SSD_SUM + SSD_CARRY 0.345 + 0.151 -> SSD_SUM 0.434 ms with the
 * accumulators passed to the link as arguments (the driver put them in
 * local memory), 0.406 at module scope; the op 1.623 -> 1.531 ms (64 x
 * 1024 0.466 -> 0.445, 24 x 1024 x 8 1.300 -> 1.230). Measured and not
 * kept: positions from the workgroup index instead of tickets (SSD_SUM
 * 0.449), a count per chain and subgroup, each subgroup waiting on its
 * own (0.462). Small chain counts lose (see chain_dflt). KEA, SSD_MAIN's
 * K elements (from SSD_KMAT) loaded before the chunk setup instead of
 * after phase 1: SSD_MAIN 0.660 -> 0.642 ms (124 registers), the op
 * 1.542 -> 1.527. Both together against round 20's kernels in one visit:
 * 1.634 -> 1.526 ms (64 x 1024 0.471 -> 0.444, 24 x 1024 x 8 1.309 ->
 * 1.227). speed.md round 21 has the tables.
 */
#include <stdlib.h>

#include "ssm_scan_paths.h"

#include "vkg_vk_spv_ssm_scan_back_ssd_carry.spv.h"
#include "vkg_vk_spv_ssm_scan_back_ssd_kmat.spv.h"
#include "vkg_vk_spv_ssm_scan_back_ssd_main.spv.h"
#include "vkg_vk_spv_ssm_scan_back_ssd_main4.spv.h"
#include "vkg_vk_spv_ssm_scan_back_ssd_main4w.spv.h"
#include "vkg_vk_spv_ssm_scan_back_ssd_reduce.spv.h"
#include "vkg_vk_spv_ssm_scan_back_ssd_sum.spv.h"
#include "vkg_vk_spv_ssm_scan_back_ssd_sumc.spv.h"
#include "vkg_vk_spv_ssm_scan_back_ssd_wsum.spv.h"
#include "vkg_vk_spv_ssm_scan_back_ssd_xc.spv.h"
#include "vkg_vk_spv_ssm_scan_back_ssd_xsum.spv.h"

/* Mirrors the push block of shaders/common/ops_ssm_scan_ssd.glsl. */
struct ssd_push {
    uint32_t ds, hd, nh, ng, nt, nq, n_slots, nc;
    uint32_t off_s, off_x, off_dt, off_A, off_B, off_C, off_ids, off_g, off_d;
    uint32_t s_p, s_h, s_slot;
    uint32_t x_h, x_t, x_q;
    uint32_t dt_t, dt_q;
    uint32_t A_h;
    uint32_t B_g, B_t, B_q, C_g, C_t, C_q;
};
_Static_assert(sizeof(struct ssd_push) == 128, "ops_ssm_scan_ssd.glsl push block");

static const struct vkg_vk_kernel k_ssd_sum =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_ssd_sum, 11, struct ssd_push);
static const struct vkg_vk_kernel k_ssd_sumc =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_ssd_sumc, 12, struct ssd_push);
static const struct vkg_vk_kernel k_ssd_kmat =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_ssd_kmat, 11, struct ssd_push);
static const struct vkg_vk_kernel k_ssd_carry =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_ssd_carry, 11, struct ssd_push);
static const struct vkg_vk_kernel k_ssd_main =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_ssd_main, 11, struct ssd_push);
static const struct vkg_vk_kernel k_ssd_main4 =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_ssd_main4, 11, struct ssd_push);
static const struct vkg_vk_kernel k_ssd_main4w =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_ssd_main4w, 11, struct ssd_push);
static const struct vkg_vk_kernel k_ssd_wsum =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_ssd_wsum, 11, struct ssd_push);
static const struct vkg_vk_kernel k_ssd_xsum =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_ssd_xsum, 11, struct ssd_push);
static const struct vkg_vk_kernel k_ssd_xc =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_ssd_xc, 11, struct ssd_push);
static const struct vkg_vk_kernel k_ssd_reduce =
    VKG_VK_KERNEL(vkg_vk_spv_ssm_scan_back_ssd_reduce, 11, struct ssd_push);

enum {
    SSD_WG = 256,     /* 16 x 16 invocations: the shader's tiles assume it */
    SSD_KT = 8,       /* SSD_MAIN's k-step (KTM of the shader), at least */
    SSD_SUM_KT = 8,   /* mirrors SKT of the shader */
    SSD_NT = 64,      /* mirrors NT */
    SSD_P2W_N = 128,  /* mirrors MNW: the wide phase 2's n per tile */
    SSD_XSUM_NT = 32, /* mirrors XNT: SSD_XSUM's columns per workgroup */
    SSD_NDOT = 16,    /* mirrors NDOT: SSD_MAIN's two-level sums */
    SSD_XC_KT = 16,   /* SSD_XC's k-step (XKT) without XCR, 8 or 16 */
    SSD_XC_N = 128,   /* mirrors XNW: SSD_XC's columns of n per workgroup */
    SSD_XC_WG = 256,  /* SSD_XC's invocations (per group of rows; 1 or 2 groups) */
    SSD_XC_WGS = 128, /* SSD_XC's workgroups wanted (head splits; see round 15) */
    SSD_Q_MAX = 64,
    SSD_SMALL_C64 = 32, /* see the defaults in vkg_vk_scan_back_ssd */
    SSD_MID_C64 = 256,
    SSD_XH_C64 = 1024,  /* XH from here (see round 7 above) */
    SSD_XS_C64 = 1024,  /* XS from here (see round 15 above) */
    SSD_CHAIN_MIN = 96, /* CHAIN's chains wanted, on NVIDIA (see chain_dflt) */
    /* CPU devices: llvmpipe ends a shader's loops past 65535 iterations in
     * all; the serial loops here (chunks, sequences x chunks) stay far below. */
    SSD_CPU_LOOP_MAX = 16384,
    /* Shorter sequences take the recurrence: a chunk is then mostly padding
     * (H200, d_state 1364, 3 tokens: 0.210 ms here, 0.055 ms there; at
     * 5-9 tokens and d_state <= 16 both take 25-29 us). */
    SSD_MIN_TOK = 16,
};

/* SSD_MAIN's invocation grid: trw x tcw (see the shader); v4: the
 * variant with contiguous rows read as vec4 (then q / trw == 4). */
struct ssd_grid {
    uint32_t trw, tcw;
    bool v4;
    uint32_t kt; /* k-step, a divisor of q */
};

/* Staging floats of SSD_MAIN (see the shader). */
static uint64_t ssd_main_stg(uint64_t q, struct ssd_grid gr) {
    return 2 * (uint64_t)gr.kt * (q + (gr.v4 ? 4 : 1)) +
           2 * (uint64_t)gr.kt * (4 * (uint64_t)gr.tcw + 4);
}

/* Shared floats of SSD_MAIN at chunk length q (see the shader). */
static uint64_t ssd_main_shared(uint64_t q, struct ssd_grid gr) {
    return 4 * q + ssd_main_stg(q, gr) + 2 * q * (q + (gr.v4 ? 4 : 1)) + 4 * q + SSD_NDOT;
}

/* Whether SSD_MAIN at chunk length q and grid gr fits the device and the
 * shader's reuse of its shared arrays. */
static bool ssd_main_fits(const struct vkg_vk_device *dev, uint64_t q, struct ssd_grid gr) {
    const struct vkg_vulkan_device_info *info = vkg_vk_device_info(dev);
    const uint64_t wg = (uint64_t)gr.trw * gr.tcw;
    return q % gr.trw == 0 && q % gr.tcw == 0 && (!gr.v4 || q / gr.trw == 4) && q % gr.kt == 0 &&
           gr.tcw * q + wg <= ssd_main_stg(q, gr) && wg <= info->max_workgroup_invocations &&
           wg <= dev->props.limits.maxComputeWorkGroupSize[0] &&
           ssd_main_shared(q, gr) * sizeof(float) <= info->max_shared_memory;
}

bool vkg_vk_scan_back_ssd(struct vkg_vk_encoder *enc, const struct vkg_tensor *node,
                          const struct vkg_scan_dims *d, enum vkg_status *st) {
    const struct vkg_vk_device *dev = vkg_vk_encoder_device(enc);
    const struct vkg_vk_ssd_tuning *tu = &dev->tuning.ssd;
    if (d->mamba1) return false;
    const struct vkg_vulkan_device_info *info = vkg_vk_device_info(dev);
    if (info->max_workgroup_invocations < SSD_WG ||
        dev->props.limits.maxComputeWorkGroupSize[0] < SSD_WG)
        return false;
    if (d->d_state < 1 || d->head_dim < 1 || d->n_tok < 1 || d->n_seqs < 1) return false;
    if ((int64_t)d->n_tok < tu->min_tokens) return false;

    /* Defaults by grid size, c64 = (sequence, head, 64-token chunk)
     * triples, from the H200 (boundaries between the measured shapes):
     *   c64 < 32 (demo, 16 heads x 64 tokens): split SSD_MAIN, no SSD_KMAT;
     *   c64 < 256 (16 heads x 256 tokens): Q = 32, k-step 16;
     *   else (64 heads x 1024 / 4096 tokens): Q = 64, k-step 8, SSD_KMAT.
     * Then the layout asked for, and plainer ones until one fits: k-step
     * 8, then 16 x 16 scalar rows, then Q = 32. */
    const uint64_t c64 =
        (uint64_t)d->n_seqs * (uint64_t)d->n_head * (((uint64_t)d->n_tok + 63) / 64);
    const int lay = tu->layout != VKG_VK_SSD_LAYOUT_AUTO ? tu->layout
                    : c64 < SSD_SMALL_C64             ? VKG_VK_SSD_LAYOUT_SMALL
                    : c64 < SSD_MID_C64               ? VKG_VK_SSD_LAYOUT_MID
                                                      : VKG_VK_SSD_LAYOUT_BIG;
    const bool small = lay == VKG_VK_SSD_LAYOUT_SMALL, mid = lay == VKG_VK_SSD_LAYOUT_MID;
    const uint64_t q_want = mid ? 32 : SSD_Q_MAX;
    const bool v4_want = tu->vec4 != 0;
    const uint32_t kt_want = mid ? 16 : SSD_KT;
    uint64_t q = 0;
    struct ssd_grid gr = {16, 16, false, SSD_KT};
    for (uint64_t qc = q_want; qc >= 32 && !q; qc /= 2)
        for (uint32_t kt = kt_want; kt >= SSD_KT && !q; kt /= 2)
            for (int plain = 0; plain < 2 && !q; plain++) {
                struct ssd_grid c = {16, 16, false, kt};
                if (!plain && v4_want)
                    c = (struct ssd_grid){(uint32_t)qc / 4, SSD_WG / ((uint32_t)qc / 4), true, kt};
                if (ssd_main_fits(dev, qc, c)) q = qc, gr = c;
            }
    if (!q || (4 * q + 4 * SSD_SUM_KT * SSD_NT) * sizeof(float) > info->max_shared_memory)
        return false;

    const uint64_t ds = (uint64_t)d->d_state, hd = (uint64_t)d->head_dim;
    const uint64_t nh = (uint64_t)d->n_head, nt = (uint64_t)d->n_tok, nq = (uint64_t)d->n_seqs;
    const uint64_t ng = (uint64_t)d->n_group;
    const uint64_t nc = (nt + q - 1) / q;
    const struct vkg_tensor *s = node->src[0], *x = node->src[1], *dt = node->src[2],
                            *A = node->src[3], *B = node->src[4], *C = node->src[5],
                            *ids = node->src[6], *g = node->src[7];
    /* Split SSD_MAIN: a workgroup per n tile of phase 2 and per p tile of
     * phase 3 of each chunk (roles), for grids too small to fill the GPU. */
    const uint64_t mnt = 4 * (uint64_t)gr.tcw;
    const bool split = small;
    const uint64_t nr = split ? (ds + mnt - 1) / mnt + (hd + mnt - 1) / mnt : 0;
    const uint64_t nr1 = nr ? nr : 1;
    /* sr: S and R per chunk, DC per chunk, DSQ per sequence, DAP per chunk
     * and role, DDT per token and role (split only). */
    /* XH: (M o Sg) B and (M o Sg)^T C summed over the heads of a group
     * first (SSD_XSUM), M o Sg per chunk and head and their terms in sr. */
    const bool xh = (tu->cross_heads == VKG_VK_SSD_CROSS_AUTO ? c64 >= SSD_XH_C64
                                                              : tu->cross_heads != VKG_VK_SSD_CROSS_OFF) &&
                    (q * (q + 1) + q * SSD_XSUM_NT) * sizeof(float) <= info->max_shared_memory;
    /* XS: the per-head state terms of d_C and d_B (G s_in^T, XD lam^T)
     * summed over heads by SSD_XC (long-k products over head x p), with
     * each head's d_l dots; SSD_MAIN leaves its phase 2 out (so with XH
     * only: phase 2 also holds the (M o Sg) terms without it). Unsplit, n in
     * one 128-column tile, SSD_XC's staging within shared memory. nxs
     * workgroups split each group's heads (their partials added by
     * SSD_REDUCE in order). */
    const uint64_t hpg = nh / ng;
    /* SSD_XC's invocations: two row groups of 8 warps where Q and the
     * device allow (round 19). With them each invocation holds its C / B
     * row pieces in registers (xcr; 16 more), and the shared memory that
     * frees holds a k-step of 32. */
    const uint32_t xwg = q % 64 == 0 && info->max_workgroup_invocations >= 2 * SSD_XC_WG &&
                                 dev->props.limits.maxComputeWorkGroupSize[0] >= 2 * SSD_XC_WG
                             ? 2 * SSD_XC_WG
                             : SSD_XC_WG;
    const uint32_t xcr = xwg == 2 * SSD_XC_WG;
    const uint64_t xkt = xcr ? 32 : SSD_XC_KT;
    /* SSD_XC's row dots summed by subgroup shuffles (lanes 1 and 2 apart)
     * or in shared memory (4 barriers per head). */
    const uint32_t sg = dev->subgroup_fixed ? dev->subgroup_fixed : info->subgroup_size;
    const uint32_t xsh = dev->subgroup_shuffle && sg >= 4;
    /* SSD_XC's shared memory: staging (xsh 0: or the dots of the column
     * groups, if larger), C / B rows, xsh 1: a row group's warps' row
     * dots. */
    const uint64_t xstg = xkt * (q + 4 + SSD_XC_N + 4), xred = 32 * (q + 1);
    const uint64_t xc_shared = ((xsh || xstg >= xred ? xstg : xred) +
                                (xcr ? 4 : q * (SSD_XC_N + 4)) + (xsh ? SSD_XC_WG / 32 * q : 1)) *
                               sizeof(float);
    /* 16-byte tile loads where every x / g_y piece is 16-byte aligned. */
    const bool xs_al =
        hd % 4 == 0 && vkg_vk_elem_offset(enc, x) % 4 == 0 && vkg_vk_elem_offset(enc, g) % 4 == 0 &&
        vkg_vk_elem_stride(x->nb[1]) % 4 == 0 && vkg_vk_elem_stride(x->nb[2]) % 4 == 0 &&
        vkg_vk_elem_stride(x->nb[3]) % 4 == 0;
    const uint32_t xv4 = xs_al;
    const bool xs = (tu->cross_heads == VKG_VK_SSD_CROSS_AUTO ? c64 >= SSD_XS_C64
                                                              : tu->cross_heads == VKG_VK_SSD_CROSS_TERMS) &&
                    xh && xsh && !split &&
                    ds <= SSD_XC_N && nc > 1 && xc_shared <= info->max_shared_memory;
    /* Head splits: enough workgroups to fill the GPU (SSD_XC_WGS), at most
     * one per head. xc_wg1: SSD_XC's workgroups per split, one per
     * (sequence, group, d_C or d_B, chunk); d_state is one 128-column tile
     * (xs needs ds <= SSD_XC_N: a head's dots are summed within a workgroup). */
    const uint64_t xc_wg1 = nq * ng * 2 * nc;
    const int64_t nxs_knob =
        tu->head_splits >= 0 ? tu->head_splits : (int64_t)((SSD_XC_WGS + xc_wg1 - 1) / xc_wg1);
    const uint64_t nxs = !xs                        ? 0
                         : nxs_knob < 1             ? 1
                         : (uint64_t)nxs_knob > hpg ? hpg
                                                    : (uint64_t)nxs_knob;
    const uint64_t sr_floats = 2 * nq * nh * nc * ds * hd + nq * nh * nc + nq * nh * ds * hd +
                               nq * nh * nc * nr1 + nq * nh * nt * nr +
                               (xh ? nq * nh * nc * q * q + 2 * nq * ng * nt * ds : 0) +
                               (xs ? 4 * nq * nh * nt : 0); /* XS: YZ[2] and FAC[2] per token */
    /* K = C B^T once per group (SSD_KMAT) instead of once per head. */
    const bool kpre = !small;
    const uint64_t bc_floats = 2 * nq * nh * nt * ds + (kpre ? nq * ng * nc * q * q : 0);
    const uint64_t range = dev->props.limits.maxStorageBufferRange;
    if (sr_floats * sizeof(float) > range || bc_floats * sizeof(float) > range ||
        sr_floats >= (1ull << 32) || bc_floats >= (1ull << 32))
        return false;
    if (info->is_cpu && (2 * nc > SSD_CPU_LOOP_MAX || nq * nc > SSD_CPU_LOOP_MAX ||
                         nq > SSD_CPU_LOOP_MAX || nh > SSD_CPU_LOOP_MAX))
        return false;

    const struct vkg_tensor *sr = vkg_vk_scratch(enc, (size_t)sr_floats * sizeof(float));
    const struct vkg_tensor *bc =
        sr ? vkg_vk_scratch(enc, (size_t)bc_floats * sizeof(float)) : NULL;
    if (!sr || !bc) {
        *st = VKG_STATUS_OUT_OF_MEMORY;
        return true;
    }
    /* The shaders index both scratch bindings from element 0: scratch
     * regions start at the binding alignment. */
    if (vkg_vk_elem_offset(enc, sr) != 0 || vkg_vk_elem_offset(enc, bc) != 0) return false;

    struct ssd_push p = {0};
    p.ds = (uint32_t)ds, p.hd = (uint32_t)hd, p.nh = (uint32_t)nh, p.ng = (uint32_t)d->n_group;
    p.nt = (uint32_t)nt, p.nq = (uint32_t)nq, p.n_slots = (uint32_t)d->n_slots;
    p.nc = (uint32_t)nc;
    VKG_SCAN_PUSH_INPUTS(p, enc, node);
    p.off_g = vkg_vk_elem_offset(enc, g);
    p.s_p = vkg_vk_elem_stride(s->nb[1]);
    p.B_g = vkg_vk_elem_stride(B->nb[1]), p.C_g = vkg_vk_elem_stride(C->nb[1]);

    /* t[11]: CHAIN's counters, bound by SSD_SUM's chain build only. */
    const struct vkg_tensor *t[12] = {s, x, dt, A, B, C, ids, g, node, sr, bc, NULL};
    const uint32_t spec[2] = {SSD_WG, (uint32_t)q};
    const uint32_t pf = 1;
    /* Big grids (64 heads x 1024 / 4096 tokens on the H200) default to the
     * wide phase 2 with WMAP, K2 and TRI (SSD_MAIN 2.24 -> 2.03 ms at 4096
     * tokens) and 16 chunks of loads in flight in SSD_CARRY (0.197 -> 0.158
     * with 8; the op 2.886 -> 2.838 ms with 16); the SSD_MAIN flags only at
     * the measured chunk length (Q = 64) and with P2W (without it WMAP + K2
     * + TRI measured far slower: 10.2 ms at 4096 tokens, 0.225 vs 0.054 ms
     * at the demo shape). */
    const int big = !small && !mid, big64 = big && q == 64;
    /* Wide phase 2 (8 x 4 blocks of d_C and d_B per invocation): the vec4
     * 16 x 16 grid at Q = 64 with K from SSD_KMAT, unsplit, where its
     * staging (unpadded sms / smk, 128-column B tiles) fits. */
    const uint64_t stgw = 2 * (uint64_t)gr.kt * (q + 4) + 2 * (uint64_t)gr.kt * (SSD_P2W_N + 4);
    const bool p2w =
        big64 && gr.v4 && q == 64 && gr.trw == 16 &&
        gr.tcw == 16 && kpre && !split &&
        (4 * q + stgw + 2 * q * q + 4 * q + SSD_NDOT) * sizeof(float) <= info->max_shared_memory;
    /* 8 x 4 blocks of invocations per 32 (vec4 grids only). */
    const uint32_t wmap = p2w && gr.v4 &&
                          gr.trw % 8 == 0 && gr.tcw % 4 == 0 && (gr.trw * gr.tcw) % 32 == 0;
    /* Masked k-steps of the causal products skipped (WMAP's contiguous
     * rows and columns). */
    const uint32_t tri = wmap && p2w;
    /* The wide phase 2 as two passes (d_C, then d_B). */
    const uint32_t p2s = 0;
    /* Phases 1 and 3 at a k-step of 2 kt: their two tiles fit the staging
     * when a token row is no longer than a column row (QP <= SBP). */
    const uint32_t k2 = p2w &&
                        q + (gr.v4 ? 4 : 1) <= 4 * (uint64_t)gr.tcw + 4 && q % (2 * gr.kt) == 0;
    /* GK (with XS, the vec4 grid): the chunk's G kept in shared memory from
     * phase 1 for phase 3 (in M o Sg's array, which nothing reads with XS;
     * F's partials in the staging instead), where head_dim is one column
     * tile that fits that array's pitch. On by default (round 17: 3% off the
     * op at all three measured shapes). */
    const uint64_t qs = p2w ? q : q + 4; /* the array's pitch (QS) */
    const uint32_t gk = xs && gr.v4 && hd <= mnt && hd <= qs &&
                        (uint64_t)(gr.trw + gr.tcw) * q <= ssd_main_stg(q, gr);
    /* L4: phase 3's lam and s_in tiles as 16-byte pieces of the scratch
     * (whole and aligned where head_dim is a multiple of 4; with one chunk
     * they come from the inputs instead). On by default since round 18:
     * SSD_MAIN 0.795 -> 0.786 ms at 64 heads x 4096 tokens (134 registers
     * instead of 140), the op 0.4-0.9% faster at all three measured shapes. */
    const uint32_t l4 = hd % 4 == 0 && nc > 1;
    /* KEA (with K from SSD_KMAT): SSD_MAIN loads its K elements before the
     * chunk setup, not after phase 1. On with the wide kernel, where it was
     * measured (round 21: SSD_MAIN 0.660 -> 0.642 ms at 64 heads x 4096
     * tokens). */
    const uint32_t kea = kpre && p2w;
    const uint32_t mspec[8] = {gr.trw * gr.tcw,
                               (uint32_t)q,
                               gr.trw,
                               gr.tcw,
                               kpre ? 1u : 0u,
                               (uint32_t)nr,
                               pf | wmap << 1 | k2 << 2 | p2s << 3 | tri << 4 | (uint32_t)xh << 5 |
                                   (uint32_t)xs << 6 | gk << 7 | l4 << 8 | kea << 9,
                               gr.kt};
    const uint32_t rspec[5] = {SSD_WG, (uint32_t)q, (uint32_t)nr, xh, (uint32_t)nxs};
    const uint64_t ntl = (ds + SSD_NT - 1) / SSD_NT, ptl = (hd + SSD_NT - 1) / SSD_NT;
    uint32_t gx, gy;
    *st = VKG_STATUS_OK;
    /* One chunk: SSD_SUM writes a_0 lambda_0 itself and SSD_MAIN reads s and
     * g_S, so both run at once and SSD_CARRY is not needed. */
    const bool one = nc == 1;
    if (kpre) { /* with SSD_SUM, before SSD_MAIN */
        vkg_vk_grid(enc, nq * ng * nc, &gx, &gy);
        *st = vkg_vk_dispatch(enc, &k_ssd_kmat, spec, 2, t, 11, &p, gx, gy, 1);
        if (*st != VKG_STATUS_OK) return true;
    }
    /* CHAIN: SSD_SUM walks the chunks itself (see the shader), no
     * SSD_CARRY. It needs workgroups that progress while others wait, so
     * by default only on the GPUs measured (NVIDIA), and only on big grids
     * with at least SSD_CHAIN_MIN chains: with fewer, each position's
     * workgroups leave the GPU idle while they wait (round 21, H200, 132
     * multiprocessors, d_state 128 unless said: 16 heads x 256 tokens, 32
     * chains, 0.069 -> 0.091 ms with it; 32 heads x 1024 tokens, 64 chains,
     * 0.326 -> 0.343; d_state 64, 64 heads x 4096 tokens, 64 chains, 1.237
     * -> 1.261; 48 heads x 4096 tokens, 96 chains, 1.236 -> 1.182; 64 heads
     * x 256 tokens, 128 chains, 0.199 -> 0.194; 64 x 1024, 0.461 -> 0.438;
     * 128 heads x 1024, 0.852 -> 0.804; 64 x 512 x 4 sequences, 0.894 ->
     * 0.817; 64 heads in 8 groups x 4096, 1.922 -> 1.826).
     * VKG_TUNE_SSD_CHAIN=1 forces it elsewhere (on CPU devices a wait may
     * pass llvmpipe's loop budget: the results are then NaN, never quietly
     * wrong). */
    const uint64_t n_chain = nq * nh * ntl * ptl;
    const bool chain_dflt =
        big && n_chain >= SSD_CHAIN_MIN && !info->is_cpu;
    const struct vkg_tensor *ctr = NULL;
    if (!one && (tu->chain < 0 ? chain_dflt : tu->chain != 0)) {
        ctr = vkg_vk_counters(enc, (uint32_t)(n_chain + 1));
        if (!ctr) {
            *st = VKG_STATUS_OUT_OF_MEMORY;
            return true;
        }
        if (vkg_vk_elem_offset(enc, ctr) != 0) ctr = NULL;
    }
    t[11] = ctr;
    {
        vkg_vk_grid(enc, nq * nh * nc * ntl * ptl, &gx, &gy);
        const uint32_t sspec[3] = {SSD_WG, (uint32_t)q, xs};
        *st = ctr ? vkg_vk_dispatch(enc, &k_ssd_sumc, sspec, 3, t, 12, &p, gx, gy, 1)
                  : vkg_vk_dispatch(enc, &k_ssd_sum, sspec, 3, t, 11, &p, gx, gy, 1);
        if (*st != VKG_STATUS_OK) return true;
    }
    if (!one || kpre) vkg_vk_barrier(enc);
    if (!one && !ctr) {
        /* Chunks per group of loads in flight (1: one chunk ahead). */
        const int cg = big ? 16 : 1;
        const uint32_t csp =
            cg >= 4 && (tu->carry_split < 0 ? nc >= 4 * (uint64_t)cg : tu->carry_split != 0);
        vkg_vk_grid(enc, ((csp ? 2 : 1) * nq * nh * ds * hd + SSD_WG - 1) / SSD_WG, &gx, &gy);
        const uint32_t cspec[4] = {SSD_WG, (uint32_t)q,
                                   cg >= 16  ? 16u
                                   : cg >= 8 ? 8u
                                   : cg >= 4 ? 4u
                                             : 1u,
                                   csp};
        *st = vkg_vk_dispatch(enc, &k_ssd_carry, cspec, 4, t, 11, &p, gx, gy, 1);
        if (*st != VKG_STATUS_OK) return true;
        vkg_vk_barrier(enc);
    }
    if (xs) { /* after SSD_SUM and SSD_CARRY (xs needs several chunks), before SSD_MAIN */
        const uint32_t xcspec[7] = {xwg, (uint32_t)q, (uint32_t)nxs, (uint32_t)xkt, xv4, xsh, xcr};
        vkg_vk_grid(enc, nxs * xc_wg1, &gx, &gy);
        *st = vkg_vk_dispatch(enc, &k_ssd_xc, xcspec, 7, t, 11, &p, gx, gy, 1);
        if (*st != VKG_STATUS_OK) return true;
        vkg_vk_barrier(enc);
    }
    {
        vkg_vk_grid(enc, nq * nh * nc * nr1, &gx, &gy);
        const struct vkg_vk_kernel *km = !gr.v4 ? &k_ssd_main : p2w ? &k_ssd_main4w : &k_ssd_main4;
        *st = vkg_vk_dispatch(enc, km, mspec, 8, t, 11, &p, gx, gy, 1);
        if (*st != VKG_STATUS_OK) return true;
        vkg_vk_barrier(enc);
    }
    if (xh) {
        vkg_vk_grid(enc, (nq * ng * nc * q * q + SSD_WG - 1) / SSD_WG, &gx, &gy);
        *st = vkg_vk_dispatch(enc, &k_ssd_wsum, rspec, 3, t, 11, &p, gx, gy, 1);
        if (*st != VKG_STATUS_OK) return true;
        vkg_vk_barrier(enc);
        /* A workgroup per (sequence, group, chunk, d_C or d_B, 32 columns
         * of n), an invocation per 4 x 2 block: Q / 4 x 16 of them. */
        const uint32_t xspec[3] = {(uint32_t)q / 4 * (SSD_XSUM_NT / 2), (uint32_t)q, (uint32_t)nr};
        vkg_vk_grid(enc, 2 * nq * ng * nc * ((ds + SSD_XSUM_NT - 1) / SSD_XSUM_NT), &gx, &gy);
        *st = vkg_vk_dispatch(enc, &k_ssd_xsum, xspec, 3, t, 11, &p, gx, gy, 1);
        if (*st != VKG_STATUS_OK) return true;
        vkg_vk_barrier(enc);
    }
    {
        const uint64_t n_red = ds * hd * nh * (uint64_t)d->n_slots + nh + 2 * ds * ng * nt * nq +
                               (nr ? nh * nt * nq : 0);
        vkg_vk_grid(enc, (n_red + SSD_WG - 1) / SSD_WG, &gx, &gy);
        *st = vkg_vk_dispatch(enc, &k_ssd_reduce, rspec, 5, t, 11, &p, gx, gy, 1);
    }
    return true;
}

/* ---- tuning (placeholder until the family's knobs move here) ---- */
static const char *const layout_names[] = {"auto", "small", "mid", "big", NULL};
static const char *const cross_names[] = {"auto", "off", "sums", "terms", NULL};
#define SSD_KEY_INT(field, lo, hi, doc) VKG_VK_TUNE_INT(struct vkg_vk_ssd_tuning, field, lo, hi, doc)
#define SSD_KEY_ENUM(field, names, doc)                                                            \
    VKG_VK_TUNE_ENUM(struct vkg_vk_ssd_tuning, field, names, doc)
const struct vkg_vk_tune_key vkg_vk_ssd_tune_keys[] = {
    SSD_KEY_INT(min_tokens, 1, 1 << 30, "shortest sequence the matrix form takes (shorter ones "
                                        "are mostly padding and take the recurrence)"),
    SSD_KEY_ENUM(layout, layout_names,
                 "auto (by chunk-heads of 64 tokens: small < 32, mid < 256, big), small (split "
                 "SSD_MAIN, K per head), mid (Q 32, k-step 16), big (Q 64 where it fits, wide "
                 "phase 2, SSD_CARRY 16 chunks in flight, CHAIN where allowed)"),
    SSD_KEY_ENUM(cross_heads, cross_names,
                 "sums over a group's heads: auto (both from 1024 chunk-heads), off, sums "
                 "((M o Sg) terms by SSD_WSUM / SSD_XSUM), terms (those and the state terms by "
                 "SSD_XC, where its conditions hold)"),
    SSD_KEY_INT(vec4, 0, 1, "SSD_MAIN's grid of contiguous rows read as vec4 where it fits "
                            "shared memory (0: strided scalar rows, as where it does not)"),
    SSD_KEY_INT(head_splits, -1, 1 << 16, "SSD_XC's workgroups per group, each a share of the "
                                          "heads; -1: auto, about 128 workgroups in all"),
    SSD_KEY_INT(carry_split, -1, 1, "SSD_CARRY's forward and backward walks in invocations of "
                                    "their own (big layout); -1: auto, from 64 chunks"),
    SSD_KEY_INT(chain, -1, 1, "SSD_SUM walks the chunks itself, no SSD_CARRY; -1: auto, big "
                              "layout from 96 chains; a CPU device defaults to 0 (its waits may "
                              "pass llvmpipe's loop budget with several threads: NaN)"),
    {NULL, 0, 0, 0, NULL, NULL},
};

void vkg_vk_ssd_tuning_defaults(struct vkg_vk_ssd_tuning *t, const struct vkg_vk_limits *lim) {
    *t = (struct vkg_vk_ssd_tuning){
        .min_tokens = SSD_MIN_TOK,
        .layout = VKG_VK_SSD_LAYOUT_AUTO,
        .cross_heads = VKG_VK_SSD_CROSS_AUTO,
        .vec4 = 1,
        .head_splits = -1,
        .carry_split = -1,
        .chain = lim->is_cpu ? 0 : -1,
    };
}
