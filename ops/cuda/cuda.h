/* ops/cuda/cuda.h: the contract of the CUDA backend: the operators and their
 * fused groups of ops/ run as CUDA kernels on an NVIDIA GPU (built for the
 * H200, sm_90a), driven by the same workloads, plans and references as the
 * host. Built only by `make cuda`; the default build never includes it.
 *
 * How the device model maps onto the GPU:
 *   GLOBAL  = HBM (cudaMalloc'd device memory)
 *   SHARED  = a thread block's shared memory; capacity = the device's
 *             sharedMemPerBlockOptin (227 KiB on an H200)
 *   LOCAL   = registers
 *   core    = an SM (cores = multiProcessorCount, 132 on an H200)
 *   tile    = a thread block (the plan's tile shape sets the block's work)
 *   launch  = a kernel launch on the instance's stream
 *   DMA     = per kernel, below: plain coalesced 16-byte loads into
 *             registers where the data is used once and a warp's loads
 *             keep enough in flight (activation, permute rows), loads
 *             staged through shared memory where a tile is reused or
 *             transposed, and cp.async (16 bytes a thread, no registers on
 *             the way) where the plan's tiles are staged in SHARED and the
 *             kernel needs more bytes in flight than its registers hold:
 *             qgemm's K tiles of A and B (three stages), conv's packed
 *             weights. No kernel uses TMA: conv's padded, dilated gathers
 *             of 2-byte NCHW elements are not TMA boxes (<= 256 elements
 *             per dimension, no dilation) nor the aligned 16-byte runs
 *             cp.async moves, and the streams gain nothing from it.
 *
 * Per kernel (the plan parameters are those of ops_plan_params; launch
 * parameters the plan does not name are said so, with why):
 *   activation  a plan tile of tile_elems elements (contiguous after
 *               dimension coalescing) runs as ceil(tile vectors / 2048)
 *               blocks of 256 threads, each over an equal share of the
 *               tile's 16-byte vectors (not in the plan: a block per tile
 *               of the default 29056 fp32 gave 578 blocks on 64 MiB and
 *               0.72-0.87 of copy); 16-byte loads straight into registers;
 *               double_buffer: the next four vectors a thread are loaded
 *               before the current four are computed and stored, else one
 *               at a time. Strided views: one element per thread through
 *               the coalesced index.
 *   permute     row copy (the output's innermost dimension is contiguous in
 *               the input): a block per run of the innermost dimension,
 *               16-byte loads; transpose: a tile_rows x tile_cols (32 or 64)
 *               tile staged through shared memory (padded by one element
 *               against bank conflicts), read along the input's contiguous
 *               dimension and written along the output's, 16 bytes a load
 *               and a store where dims, strides and bases allow (else 8, 4
 *               or one element), every load of a thread issued before its
 *               first shared-memory store; grid x walks
 *               the input-contiguous dimension. Grid y and z are
 *               at most 65535 on the GPU: larger counts are covered by
 *               striding over blockIdx.y/z inside the kernel, i.e. the
 *               split happens where the hardware limit bites, not at the
 *               model's dma.max_last_dim (65535 elements per transfer), which
 *               a GPU load does not have.
 *   qgemm       grid (ceil(n/tile_n), parts) from ops_qgemm_tiles_get with
 *               cores = SMs; 512 threads; each of 16 warps owns 4 columns
 *               of the n tile (tile_n <= 64); dp4a on 16-byte vectors of A
 *               and B (B streamed once, A re-read per n tile through L2).
 *               Where K and tile_kk are multiples of 16, steps of 512
 *               bytes of K (the 8 A rows and the tile's columns, 36 KiB)
 *               are staged in shared memory by cp.async.ca, three stages
 *               deep (not in the plan, whose double_buffer this deepens:
 *               qgemm.cu gives the sweep); else 16-byte register loads
 *               with the lines one step ahead prefetched into L1. A part walks
 *               the K range of its K tiles and widens its int32 sums to
 *               int64 in shared memory every 65536 of K, the exact int32
 *               bound (not in the plan: widening per tile_kk is the same
 *               sum, and under the planner's tile_kk 256 it left half of
 *               each warp idle, 0.21 of copy); split-K parts add into an
 *               int64 [m,n] accumulator in HBM with 64-bit atomics and the
 *               last part of an n tile (a ticket counter) runs the epilogue
 *               (dequantise + bias + activation, or requantise) and resets
 *               the accumulator and its ticket for the next launch.
 *   conv2d      untiled: a thread per output; direct: a block of
 *               tile_oh x tile_ow threads, tile_k output channels per
 *               thread in registers, the input patch and the weights of
 *               tile_c channels staged in shared memory; im2col: an
 *               implicit GEMM (M = n*oh*ow, N = k/groups, K = c/groups*r*s).
 *               fp16/bf16 on the tensor cores (ldmatrix + mma.sync
 *               m16n8k16, fp32 accumulators), 256 threads a block, a
 *               block tile of th x tw output pixels of one image (128 or
 *               32 GEMM rows: 128 when that gives two blocks an SM, else
 *               32; at n = 1 on 56x56 4x8 tiles, 98 blocks) by 64 output
 *               channels; per chunk of 64 (16 when the group has under 48
 *               channels or K is split) input channels the tile's input
 *               patch goes to shared memory channel-innermost and the
 *               weights as [tap][n][channel], so that each tap's A rows are
 *               the patch's pixel rows shifted, read by ldmatrix with no
 *               im2col copy. DMA: the patch as plain 2-byte loads through
 *               registers, coalesced along the pixels (NCHW has no 16-byte
 *               runs along the channels, and the taps' shifts break the
 *               alignment cp.async needs), the next chunk's issued before
 *               the current one is computed; the weights by cp.async
 *               (16 bytes a thread, no registers) from a copy packed once
 *               when the instance is made into the layout shared memory
 *               takes (swizzled, zero past the group), kept in shared
 *               memory across the tiles of a persistent grid (at most the
 *               blocks the SMs hold) when the group's channels are one
 *               chunk; the epilogue staged through shared memory and
 *               written along output rows (16-byte stores when the tile
 *               and row widths are multiples of 8). None of these tile shapes is in
 *               the plan, whose conv tiles are the direct strategy's; a
 *               shape whose weights chunk does not fit (over 36 taps) runs
 *               the FFMA kernel. fp32 (and that fallback): 64x64 block
 *               tiles of FFMA, K step 16, gathered into shared memory
 *               through a (c, r, s) offset table, register double
 *               buffering (TF32 off: it would change the numerics the
 *               references hold fp32 to). Both: the plan's split_k splits
 *               K over blocks (the tensor-core kernel by chunks; fp32
 *               partial tiles in a scratch, added in part order by the
 *               tile's last part, so the output is the same on every run;
 *               0, the default, does not split the tensor-core kernel
 *               (an automatic split for n = 1 measured slower on the
 *               H200) and splits an FFMA grid of fewer tiles than SMs to
 *               about three blocks an SM, at least 4 K steps a part).
 *   fused groups  fused: one kernel, the epilogue applied to the tile in
 *               registers; unfused: a kernel per op, intermediates in HBM
 *               (as on the host, in the storage dtype).
 *
 * Errors: every CUDA call is checked; a failure is OPR_EIO with CUDA's
 * message. */
#ifndef OPS_CUDA_H
#define OPS_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "../ops.h"

/* What the device reports, for the envelope and the archive. */
struct ops_cuda_info {
	char name[256];
	int device;
	int cc_major, cc_minor;
	int sm_count;
	size_t shared_per_block_optin; /* bytes */
	size_t shared_per_sm;          /* bytes */
	size_t l2_bytes;
	size_t global_bytes;
	int clock_khz;                 /* SM clock, cudaDevAttrClockRate */
	int mem_clock_khz;
	int mem_bus_bits;
	int driver_version;            /* e.g. 13000 */
	int runtime_version;
};

struct ops_cuda;

/* Opens device `device` (a stream, timing events, an L2 flush buffer of
 * twice the L2). Caller frees with ops_cuda_free. OPR_EIO when there is no
 * usable device. */
int ops_cuda_new(int device, struct ops_cuda **out, struct opr_error *err);
void ops_cuda_free(struct ops_cuda *cu); /* NULL is fine */
const struct ops_cuda_info *ops_cuda_info(const struct ops_cuda *cu);
/* An envelope for this device: cores = SMs, SHARED capacity from the device,
 * clocks from the device; bandwidths and rates are the H200's datasheet
 * values scaled by SM count and clock (leads until `calibrate` measures
 * them on the device). */
void ops_cuda_envelope(const struct ops_cuda *cu, struct ops_envelope *env);
/* Writes `bytes` to the L2 flush buffer, so the next launch finds its
 * operands in HBM (cold). Asynchronous on the backend's stream. */
int ops_cuda_flush_l2(struct ops_cuda *cu, struct opr_error *err);
int ops_cuda_sync(struct ops_cuda *cu, struct opr_error *err);

/* A workload instance on the GPU: device copies of the instance's tensors,
 * scratch, and the launches of its plan. */
struct ops_cuda_inst;
/* Uploads inst's inputs; inst must outlive the returned object. */
int ops_cuda_inst_new(struct ops_cuda *cu, struct ops_instance *inst,
		      struct ops_cuda_inst **out, struct opr_error *err);
void ops_cuda_inst_free(struct ops_cuda_inst *gi); /* NULL is fine */
/* Enqueues the plan's launches (asynchronous). */
int ops_cuda_inst_launch(struct ops_cuda_inst *gi, struct opr_error *err);
/* A checked run: poisons the device outputs (0xFF) and inst's host
 * outputs, launches, waits and copies the outputs (and qgemm's exact int64
 * accumulators) back into inst, so ops_instance_quality checks the GPU's
 * results against the fp64 / exact reference. */
int ops_cuda_inst_run_checked(struct ops_cuda_inst *gi, struct opr_error *err);
/* Kernel launches per run of the plan. */
int ops_cuda_inst_launches(const struct ops_cuda_inst *gi);
/* "act_contig<fp32,relu> grid 572x1x1 block 256" for the last launch
 * shape of the instance (tables, logs). */
const char *ops_cuda_inst_shape(const struct ops_cuda_inst *gi);

/* Times the instances interleaved: round r runs v[(r + i) % nv] for i < nv
 * (A B, B A, ...), each sample one run between two CUDA events, the L2
 * flushed before each sample when flush_l2 (cold HBM, the default), else
 * warm. ns[i * samples + s] is sample s of v[i], in nanoseconds. */
int ops_cuda_time(struct ops_cuda *cu, struct ops_cuda_inst *const *v, int nv,
		  int samples, int flush_l2, double *ns, struct opr_error *err);
/* Times `reps` back-to-back runs of one instance captured in a CUDA graph
 * (for launches so short that the launch gaps dominate): the mean ns per run. */
int ops_cuda_time_graph(struct ops_cuda *cu, struct ops_cuda_inst *gi, int reps,
			double *ns_per_run, struct opr_error *err);

/* y = act(x) over strided views (host tensors, strides in elements, rank
 * 0..8) on the GPU: the spans of x and y are copied to the device, y's span
 * is poisoned, the kernel runs and y's span is copied back. x and y must be
 * distinct host buffers unless in place (x == y with equal strides). */
int ops_cuda_activation_strided(struct ops_cuda *cu, enum ops_act a, enum ops_dtype t,
				int rank, const int64_t *dims, const void *x,
				const int64_t *xstride, void *y, const int64_t *ystride,
				struct opr_error *err);

/* A device-to-device copy of `bytes` (a float4 grid-stride kernel), timed:
 * the reference for bandwidth ratios. Median of `samples` in ns. */
int ops_cuda_copy_bench(struct ops_cuda *cu, size_t bytes, int samples, double *median_ns,
			struct opr_error *err);

/* ---- calibration (ops/cuda/probe.cu) -------------------------------------- */

/* 1 in a build with this backend linked (`make cuda`), 0 in the plain build
 * (ops/cuda_none.c, where every other function here fails with OPR_ENODEV). */
int ops_cuda_built(void);

/* The microbenchmarks of `calibrate --device cuda`, one per envelope term. */
enum ops_cuda_probe {
	OPS_CUDA_P_COPY,        /* HBM copy, GB/s read + written */
	OPS_CUDA_P_L2,          /* the same in the L2, GB/s */
	OPS_CUDA_P_SHARED,      /* shared-memory reads, GB/s per SM */
	OPS_CUDA_P_FP32,        /* FFMA, TOPS */
	OPS_CUDA_P_FP16,        /* mma.sync f16, TOPS */
	OPS_CUDA_P_BF16,        /* mma.sync bf16, TOPS */
	OPS_CUDA_P_INT8,        /* dp4a, TOPS */
	OPS_CUDA_P_INT8_MMA,    /* mma.sync s8, TOPS */
	OPS_CUDA_P_VECTOR,      /* SiLU on fp32, 1e12 elements/s */
	OPS_CUDA_P_VECTOR_HALF, /* SiLU on bf16, 1e12 elements/s */
	OPS_CUDA_P_LAUNCH,      /* empty kernel, us per launch */
	OPS_CUDA_P_LATENCY,     /* one dependent HBM load, ns */
	OPS_CUDA_P_LAUNCH_FIRST,/* one empty kernel timed as a review sample, us */
	OPS_CUDA_P_LAUNCH_NEXT, /* each further launch in such a sample, us */
	OPS_CUDA_NPROBES
};
/* Runs probe p `samples` times after one warm-up launch: value[s] in the
 * probe's unit. quick: smaller buffers and loops (tests). */
int ops_cuda_probe(struct ops_cuda *cu, enum ops_cuda_probe p, int quick, int samples,
		   double *value, struct opr_error *err);
/* What the probe measures, for the envelope's calibration: (static text). */
const char *ops_cuda_probe_method(enum ops_cuda_probe p);

/* ---- the pipeline on the device (ops/cuda/replay.cu) ------------------------ */

/* The device time of each kernel launch of one run of gi's plan, in order:
 * the run's launches captured as a graph, then launched one by one on cu's
 * stream with an event after each, the L2 flushed before the run; ns[i] is
 * the median over `samples` runs of launch i (from the previous event, so a
 * launch's time includes the gap before it). *nlaunch <= max launches. */
int ops_cuda_inst_launch_times(struct ops_cuda_inst *gi, struct ops_cuda *cu, int samples,
			       double *ns, int max, int *nlaunch, struct opr_error *err);

/* One job of a replayed arrival trace: issued by the host issue_ns after the
 * replay starts, on stream `stream`, as `runs` back-to-back runs of the plan
 * (a batch of that many requests). */
struct ops_cuda_replay_job {
	double issue_ns;
	int stream;
	int runs;
};
/* Replays jobs (in issue order) on nstreams CUDA streams, each with its own
 * copy of inst on the device and the plan captured as a graph; start_ns[j]
 * and end_ns[j] are when the job's stream reached it and finished it (CUDA
 * events), in ns since the replay started. */
int ops_cuda_replay(struct ops_cuda *cu, struct ops_instance *inst, int nstreams,
		    const struct ops_cuda_replay_job *jobs, size_t njobs, double *start_ns,
		    double *end_ns, struct opr_error *err);

#ifdef __cplusplus
}
#endif

#endif
