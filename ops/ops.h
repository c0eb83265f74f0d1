/* ops/ops.h: the contract of ops/: dtypes, the explicit-address-space device
 * model with its exact counters and modelled time, the four operators and their
 * fused groups behind one workload interface, and the tile-plan planner.
 *
 * Units: bytes, elements, nanoseconds (ns), GB/s (1e9 bytes/s), TOPS (1e12
 * ops/s, one MAC = 2 ops). Counters are exact integers. */
#ifndef OPS_H
#define OPS_H

#include <stddef.h>
#include <stdint.h>

#include "../opreview.h"

/* ---- dtypes ---------------------------------------------------------------- */

enum ops_dtype { OPS_F32, OPS_F16, OPS_BF16, OPS_S8, OPS_U8, OPS_S32, OPS_NDTYPES };

const char *ops_dtype_name(enum ops_dtype t);      /* "fp32","fp16","bf16","s8","u8","s32" */
size_t ops_dtype_size(enum ops_dtype t);
/* Parses "fp32|fp16|bf16|int8|s8|u8|s32"; "int8" means s8. 0 or OPR_EINPUT. */
int ops_dtype_parse(const char *s, enum ops_dtype *out);

/* Scalar conversions, portable C: fp16 and bf16 round to nearest even, an
 * overflow gives inf, a NaN stays a (quiet) NaN. */
uint16_t ops_f32_to_f16(float f);
float ops_f16_to_f32(uint16_t h);
uint16_t ops_f32_to_bf16(float f);
float ops_bf16_to_f32(uint16_t b);
/* Vector conversions of n elements between fp32 and a storage dtype
 * (OPS_F32 copies). */
void ops_to_f32(enum ops_dtype t, const void *src, float *dst, size_t n);
void ops_from_f32(enum ops_dtype t, const float *src, void *dst, size_t n);

/* ---- host kernel paths (ISA) --------------------------------------------------
 * Every host kernel family has a portable C path, an AVX2 path (AVX2, FMA,
 * F16C) and an AVX-512 path (F, BW, VL, DQ, VNNI; BF16 and FP16 where the
 * host has them). One is chosen at start-up: the best the host's CPUID
 * allows, or the one OPREVIEW_ISA names (scalar, avx2, avx512). Only the
 * functions of the chosen path run; the rest of the binary is baseline
 * x86-64, so it runs (on the portable path) on a CPU without AVX2. */
enum ops_isa { OPS_ISA_SCALAR, OPS_ISA_AVX2, OPS_ISA_AVX512, OPS_NISAS };
/* The kernel families, each of which names the path it runs. */
enum ops_kfam {
	OPS_KF_CONV, OPS_KF_GEMM, OPS_KF_QGEMM, OPS_KF_ACT, OPS_KF_PERMUTE,
	OPS_KF_CONVERT, OPS_NKFAMS
};

const char *ops_isa_name(enum ops_isa i);  /* "scalar", "avx2", "avx512" */
/* Parses the names above. 0 or OPR_EINPUT. */
int ops_isa_parse(const char *s, enum ops_isa *out);
/* 1 when the host (CPUID and the OS's saved register state) runs path i. */
int ops_isa_host_has(enum ops_isa i);
enum ops_isa ops_isa_host_best(void);
/* The path the kernels run now. */
enum ops_isa ops_isa_active(void);
/* Switches every family to path i: OPR_ELIMIT (nothing changed) when the
 * host lacks it. Not thread-safe: call it while no kernel runs. */
int ops_isa_select(enum ops_isa i, struct opr_error *err);
/* Applies OPREVIEW_ISA when set: OPR_EINPUT for an unknown name, OPR_ELIMIT
 * for a path the host lacks (the message says which the host has). */
int ops_isa_from_env(struct opr_error *err);
const char *ops_kfam_name(enum ops_kfam f); /* "conv2d", "gemm_f32", "qgemm", ... */
/* The path family f runs now, with the instructions it uses, e.g.
 * "avx512 (vnni vpdpbusd)" or "scalar". Static storage. */
const char *ops_kfam_path(enum ops_kfam f);
/* The instruction set family f's kernels need now: ops_isa_active but for
 * qgemm on an AVX-512 CPU without VNNI, which runs the AVX2 path's. */
enum ops_isa ops_kfam_isa(enum ops_kfam f);
/* 1 when qgemm runs on AVX-VNNI's ymm vpdpbusd (the AVX2 path on a CPU
 * that has it), so that what measures its peak uses the same instruction. */
int ops_qgemm_avx_vnni(void);

/* ---- activations ------------------------------------------------------------ */

enum ops_act {
	OPS_ACT_NONE, OPS_ACT_RELU, OPS_ACT_GELU_ERF, OPS_ACT_GELU_TANH,
	OPS_ACT_SILU, OPS_ACT_SIGMOID, OPS_ACT_TANH, OPS_NACTS
};
const char *ops_act_name(enum ops_act a); /* "none","relu","gelu","gelu-tanh",... */
/* Parses the names above; "gelu-erf" is an alias of "gelu". 0 or OPR_EINPUT. */
int ops_act_parse(const char *s, enum ops_act *out);
double ops_act_ref(enum ops_act a, double x); /* fp64 reference */

/* ---- counter-based random inputs -------------------------------------------- */

/* Deterministic, order-independent: element i of tensor (seed, block, tensor)
 * is a pure function of its key (SplitMix64/Philox style), so the same seed
 * gives bit-identical inputs whatever the order or the thread count. */
uint64_t ops_rng_key(uint64_t seed, const char *block, const char *tensor);
/* Uniform in [lo, hi), never exactly 0.0 (zeros are replaced). */
void ops_rng_fill_f32(uint64_t key, float *dst, size_t n, float lo, float hi);
/* Uniform integers in [lo, hi]. */
void ops_rng_fill_i8(uint64_t key, int8_t *dst, size_t n, int lo, int hi);
void ops_rng_fill_u8(uint64_t key, uint8_t *dst, size_t n, int lo, int hi);

/* A sequential generator for seeded resampling, shuffles and simulation:
 * xoshiro256** (Blackman & Vigna, "Scrambled linear pseudorandom number
 * generators", 2021) seeded through SplitMix64; one per purpose, so results
 * do not depend on what else drew numbers. */
struct ops_xoshiro {
	uint64_t s[4];
};
/* SplitMix64 step: advances *state and returns the next output. */
uint64_t ops_splitmix64(uint64_t *state);
/* order[0..n) = a random permutation of 0..n-1 drawn from *state with
 * ops_splitmix64 (Fisher-Yates): the interleaved rounds' order. */
void ops_shuffle_order(int *order, int n, uint64_t *state);
void ops_xoshiro_seed(struct ops_xoshiro *g, uint64_t seed);
uint64_t ops_xoshiro_next(struct ops_xoshiro *g);

/* ---- the hardware envelope -------------------------------------------------- */

/* Kernel families a GPU envelope prices apart (ops_envelope.kern): a launch's
 * family follows from its name (conv2d..., qgemm..., permute..., anything
 * else element-wise) and, where its family has two kernels, from which one
 * ran (ops_launch_alt_kernel): a permute whose output rows are contiguous
 * runs in the input (no transpose) is permute-rows, a conv2d as an implicit
 * GEMM (im2col: tensor cores on a GPU) is conv-gemm, the direct and untiled
 * ones conv. A conv-gemm launch an envelope has no cost for is priced as
 * conv (the envelopes calibrated before the split). */
enum ops_kernel_class {
	OPS_KC_CONV, OPS_KC_QGEMM, OPS_KC_PERMUTE, OPS_KC_PERMUTE_ROWS, OPS_KC_ELEMENTWISE,
	OPS_KC_CONV_GEMM, OPS_NKCLASSES
};
const char *ops_kernel_class_name(enum ops_kernel_class f); /* "conv", ... */
/* The family of a launch named name (alt: its family's other kernel ran). */
enum ops_kernel_class ops_kernel_class_of(const char *name, int alt);

/* 256 covers an H200 (132 SMs) with room; the device keeps its active cores
 * in a bitset of OPS_CORE_WORDS words, so a launch's model still visits only
 * the cores it touched. */
#define OPS_MAX_CORES 256
#define OPS_CORE_WORDS (OPS_MAX_CORES / 64)

struct ops_envelope {
	char name[64];
	char power_mode[16];      /* low | nominal | boost */
	double clock_ghz;
	double clock_scale;       /* low 0.7, nominal 1.0, boost 1.2: scales compute */
	int cores;
	double global_bw_gbps;    /* off-chip, shared by all cores: a byte read
				   * plus a byte written, the round trip */
	/* Per direction, where the envelope has them (a host calibration): a
	 * byte read from GLOBAL costs 1 / global_read_bw_gbps, a byte written
	 * 1 / global_write_bw_gbps, each shared by the active cores like the
	 * round trip. 0 (unset, as in every envelope without
	 * global.read_gbps / global.write_gbps): that direction is priced at
	 * global_bw_gbps; both unset, the GLOBAL term is the single-bandwidth
	 * one, bit for bit (ops/model.c). */
	double global_read_bw_gbps;
	double global_write_bw_gbps;
	/* A host calibration's one_pass: {FAMILY: share}: the share of the
	 * GLOBAL rates above that a family's one-pass launch streams at
	 * (ops_launch_one_pass; collect/calibrate.c measures the qgemm's). A
	 * streaming kernel that computes between its loads keeps fewer lines in
	 * flight than a loop of loads does, so its G is G / share (ops/model.c).
	 * 0 (unset): 1, the plain stream's rate. */
	double one_pass_share[OPS_NKCLASSES];
	double global_capacity_gib;
	double shared_capacity_kib; /* per core */
	double shared_bw_gbps;      /* per core */
	double local_capacity_kib;  /* per core */
	int64_t dma_max_last_dim;   /* elements per transfer in the last dim */
	double dma_setup_ns;        /* per transfer */
	int dma_engines;            /* per core; setup cost is spread over them */
	int dma_serial;             /* 1: transfers run on the compute's own thread
				     * in program order (a CPU host): nothing
				     * overlaps compute, double-buffered or not */
	double tops[OPS_NDTYPES];   /* by input dtype; s8 and u8 share "int8" */
	double vector_tops;         /* element-wise ops (activation, bias, dequant)
				     * per second / 1e12 over all cores; 0: they
				     * run at their dtype's rate, one op each */
	double vector_half_tops;    /* the same on fp16/bf16 data, conversions
				     * included; 0: at vector_tops */
	double launch_overhead_us;
	/* GPU envelopes only (calibrate --device cuda; 0 / unset on a host, where
	 * nothing below changes the model): what our own kernels pay, fitted
	 * from CUDA-event times of them (collect/gpu.c):
	 *   launch_first_us  the first launch of a run (event, launch, event after
	 *                    an L2 flush, as the review times a sample); the
	 *                    others cost launch_overhead_us; 0: all the same
	 *   kern[f]          per kernel family f (ops_kernel_family): efficiency
	 *                    scales the family's compute, SHARED and GLOBAL terms
	 *                    (measured body / the body at the probes' peak rates)
	 *                    and transfer_ns replaces dma_setup_ns / engines as
	 *                    the exposed cost of each transfer (ops/model.c) */
	double launch_first_us;
	/* Set by whoever runs the plans, never read from a file: 1 when they
	 * run on a CUDA GPU (a profile's device: cuda), whose op set has no
	 * winograd kernel, so the planner offers none and a pinned winograd
	 * plan does not fit (falls back, with that reason). */
	int cuda_executor;
	struct ops_kernel_cost {
		double efficiency;  /* > 0 when the family was calibrated */
		double transfer_ns; /* per transfer of the slowest core */
	} kern[OPS_NKCLASSES];
};

/* ---- the device model ------------------------------------------------------- */

enum ops_space { OPS_GLOBAL, OPS_SHARED, OPS_LOCAL, OPS_NSPACES };
const char *ops_space_name(enum ops_space s); /* "GLOBAL","SHARED","LOCAL" */

/* Exact counters of everything the simulated hierarchy did. A count-only dry
 * run gives the same values as a real run. */
struct ops_counters {
	uint64_t bytes[OPS_NSPACES][OPS_NSPACES]; /* DMA bytes [src][dst] */
	uint64_t compute_read_bytes;  /* bytes consumed by compute from SHARED/LOCAL */
	uint64_t compute_write_bytes; /* bytes produced by compute into SHARED/LOCAL */
	uint64_t transfers;           /* DMA descriptors issued (after splitting) */
	uint64_t splits;              /* extra transfers caused by max_last_dim */
	uint64_t launches;
	uint64_t tiles;
	uint64_t fallbacks;           /* plans that did not fit and were replaced */
	uint64_t macs[OPS_NDTYPES];   /* multiply-accumulates by input dtype */
	uint64_t elem_ops;            /* element-wise evaluations (activation, bias) */
	uint64_t peak_shared_bytes;   /* largest SHARED footprint on one core */
	uint64_t core_work[OPS_MAX_CORES]; /* MACs + element ops placed on each core */
};
/* The one definition of a plan's GLOBAL traffic and on-chip reuse, used by
 * the planner (worksheet) and the analyzer (bottleneck evidence, summary):
 *   GLOBAL bytes = bytes read from GLOBAL + bytes written to GLOBAL (a
 *                  GLOBAL -> GLOBAL copy does both: it counts twice), the
 *                  traffic the model's GLOBAL term prices (ops/device.c)
 *                  and the SDE GLOBAL_READ_BYTES + GLOBAL_WRITE_BYTES;
 *   reuse ratio  = bytes consumed by compute from SHARED/LOCAL / bytes brought
 *                  on chip from GLOBAL (GLOBAL -> SHARED + GLOBAL -> LOCAL);
 *                  0 when nothing was brought on chip (Timeloop: accesses at
 *                  a level over fills from its parent). */
uint64_t ops_global_bytes(const struct ops_counters *c);
double ops_reuse_ratio(const struct ops_counters *c);

/* Modelled time of one launch and its terms (ns), see ops/model.c:
 *   per core c:  C_c = compute ops / (rate_dtype / cores)
 *                S_c = SHARED bytes / shared_bw = Sd_c (by DMA) + Sc_c (by compute)
 *                G_c = GLOBAL bytes of c / (global_bw / active cores)
 *                D_c = transfers of c * dma_setup_ns / dma_engines
 *   double-buffered:  T_c = max(C_c, S_c, G_c) + D_c              (roofline-like)
 *   single-buffered:  T_c = C_c + S_c + G_c + D_c                  (ECM-like)
 *   dma_serial (host): T_c = max(C_c, Sc_c) + max(G_c, Sd_c) + D_c (copy, then compute);
 *                      a one-pass launch max(C_c, G_c) + D_c
 *   T = launch_overhead + max_c T_c                (slowest core ends it) */
struct ops_launch_rec {
	char name[48];
	int cores_used;
	int double_buffer;
	int one_pass;           /* element-wise over contiguous tiles: a serial-DMA
				 * host runs each tile in one pass (device_int.h,
				 * ops_launch_one_pass) */
	int zero;               /* always 0: the record has no padding, so records
				 * compare byte for byte */
	uint64_t global_bytes;  /* into and out of GLOBAL */
	uint64_t shared_bytes;  /* DMA into/out of SHARED plus compute reads/writes */
	uint64_t transfers;
	uint64_t work;          /* MACs + element ops */
	double overhead_ns, compute_ns, shared_ns, global_ns, dma_ns; /* of the slowest core */
	double shared_dma_ns;   /* the part of shared_ns moved by DMA (Sd) */
	double imbalance;       /* max core work / mean core work, 1 = balanced */
	double model_ns;        /* T */
};

struct ops_device;

/* Creates a device for an envelope. dry_run: count only, move no data and
 * compute nothing. Caller frees with ops_device_free. */
int ops_device_new(const struct ops_envelope *env, int dry_run,
		   struct ops_device **out, struct opr_error *err);
void ops_device_free(struct ops_device *dev); /* NULL is fine */
int ops_device_dry_run(const struct ops_device *dev);
const struct ops_envelope *ops_device_envelope(const struct ops_device *dev);
/* Zeroes the counters and forgets the launch records. */
void ops_device_reset(struct ops_device *dev);
const struct ops_counters *ops_device_counters(const struct ops_device *dev);
/* Launch records since the last reset; owned by the device. */
const struct ops_launch_rec *ops_device_launches(const struct ops_device *dev, size_t *n);
/* Sum of model_ns over the launch records. */
double ops_device_model_ns(const struct ops_device *dev);
/* A launch record split for a simulation that serves the GLOBAL transfer
 * itself (collect/pipeline.c): the per-core on-chip time beside it (compute,
 * SHARED traffic and DMA setup, by the same rules as ops/model.c), and
 * whether the transfer overlaps that time (1) or precedes it (0). */
double ops_model_onchip_ns(const struct ops_envelope *env, const struct ops_launch_rec *r,
			   int *overlapped);

/* A buffer in one space. SHARED and LOCAL are per core: an allocation that
 * would take the core's footprint past capacity fails with OPR_ELIMIT and a
 * reason. In a dry run data is NULL.
 * Ping-pong buffers on the host: the host finishes each tile's transfers and
 * compute before the next tile begins, so a kernel whose tiles are
 * independent may move every tile through the first buffer of a
 * double-buffered pair. The second is still allocated and counted (capacity,
 * footprint); only its host memory stays idle, which leaves its share of the
 * cache to the operands (the [4096, 70000] fp32 transpose: 3-10% faster). */
struct ops_buf {
	enum ops_space space;
	size_t bytes;
	void *data;
};
int ops_buf_alloc(struct ops_device *dev, enum ops_space space, size_t bytes,
		  struct ops_buf *out, struct opr_error *err);
void ops_buf_release(struct ops_device *dev, struct ops_buf *buf);

/* A strided copy between spaces, rank 1..4, strides in elements. The last
 * dimension must not exceed envelope.dma_max_last_dim: a larger one is refused
 * with OPR_ELIMIT, and callers split (ops_dma_split does it for them). */
#define OPS_DMA_MAX_RANK 4
struct ops_dma_desc {
	int rank;
	int64_t shape[OPS_DMA_MAX_RANK];
	int64_t src_stride[OPS_DMA_MAX_RANK];
	int64_t dst_stride[OPS_DMA_MAX_RANK];
	size_t elem_bytes;
};
int ops_dma(struct ops_device *dev, enum ops_space dst_space, void *dst,
	    enum ops_space src_space, const void *src,
	    const struct ops_dma_desc *d, struct opr_error *err);
/* Same, splitting the last dimension into chunks of max_last_dim and
 * counting the extra transfers as splits. */
int ops_dma_split(struct ops_device *dev, enum ops_space dst_space, void *dst,
		  enum ops_space src_space, const void *src,
		  const struct ops_dma_desc *d, struct opr_error *err);

/* A launch over a grid of tiles; tile t runs on core t % cores unless placed. */
int ops_launch_begin(struct ops_device *dev, const char *name, int double_buffer,
		     struct opr_error *err);
void ops_tile_begin(struct ops_device *dev, int64_t tile);
/* Records compute on the current tile's core: macs of dtype t, element ops,
 * and the bytes compute read from and wrote to on-chip spaces. */
void ops_compute(struct ops_device *dev, enum ops_dtype t, uint64_t macs,
		 uint64_t elem_ops, uint64_t read_bytes, uint64_t write_bytes);
int ops_launch_end(struct ops_device *dev, struct opr_error *err);
void ops_note_fallback(struct ops_device *dev);

/* ---- workloads: the operators and fused groups ------------------------------ */

enum ops_group {
	OPS_G_ACTIVATION,          /* element-wise activation */
	OPS_G_CONV,                /* conv2d */
	OPS_G_CONV_BIAS_ACT,       /* conv2d+bias+activation */
	OPS_G_QGEMM,               /* qgemm */
	OPS_G_QGEMM_DQ_BIAS_ACT,   /* qgemm+dequant+bias+activation */
	OPS_G_PERMUTE,             /* permute */
	OPS_G_PERMUTE_ACT,         /* permute+activation */
	OPS_NGROUPS
};
const char *ops_group_name(enum ops_group g);
int ops_group_parse(const char *s, enum ops_group *out);
/* Number of ops in the group when unfused (launches of the unfused form). */
int ops_group_nops(enum ops_group g);

#define OPS_MAX_RANK 8

struct ops_conv_shape {
	int64_t n, c, h, w, k, r, s;
	int64_t stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups;
};
struct ops_gemm_shape { int64_t m, n, k; };
struct ops_tensor_shape {
	int rank;                       /* 0..8 */
	int64_t dims[OPS_MAX_RANK];
	int perm[OPS_MAX_RANK];         /* permute only */
};

struct ops_quant {
	enum ops_dtype a;               /* OPS_U8 or OPS_S8 */
	int32_t a_zero_point;
	float a_scale;                  /* dequantisation scale of A */
	int b_per_channel;              /* 0: per-tensor scale, 1: per output channel */
	enum ops_dtype out;             /* OPS_F32 (dequantise) or OPS_S8 (requantise) */
	float out_scale;                /* requantise only */
	int32_t out_zero_point;         /* requantise only */
};

struct ops_workload {
	enum ops_group group;
	enum ops_act act;               /* for groups with an activation */
	enum ops_dtype dtype;           /* storage dtype; s8 for qgemm */
	struct ops_conv_shape conv;
	struct ops_gemm_shape gemm;
	struct ops_tensor_shape tensor; /* activation and permute */
	struct ops_quant quant;
};

/* A tile plan. Parameters are named per operator (ops_plan_params lists them);
 * 0 in a parameter means "the operator's default". */
#define OPS_PLAN_MAX_PARAMS 8
/* conv2d's strategies: untiled, direct, im2col (an implicit GEMM) and
 * winograd (F(4x4, 3x3): 3x3 filters, stride and dilation 1, fp32 only;
 * ops/conv_wino.c). The other groups run direct. */
enum ops_strategy {
	OPS_STRAT_UNTILED, OPS_STRAT_DIRECT, OPS_STRAT_IM2COL, OPS_STRAT_WINOGRAD, OPS_NSTRATS
};
struct ops_plan {
	int fused;                      /* 1: one launch, intermediates in SHARED */
	enum ops_strategy strategy;
	int64_t p[OPS_PLAN_MAX_PARAMS]; /* e.g. conv: tile_k, tile_oh, tile_ow, tile_c */
	int split_k;
	int double_buffer;
};
/* 1 when two plans are the same plan (every field; padding ignored). */
int ops_plan_equal(const struct ops_plan *a, const struct ops_plan *b);
/* Names of the plan parameters of a group, NULL-terminated, in p[] order. */
const char *const *ops_plan_params(enum ops_group g);
/* "direct tile_k=32 tile_oh=8 ... fused" for tables. */
void ops_plan_describe(enum ops_group g, const struct ops_plan *p, char *buf, size_t len);

/* Host storage as a tensor gets it: 64-byte aligned and, from 4 MiB on, in
 * 2 MiB pages with the transparent-huge-page hint (so that what measures
 * the host, calibrate, sees the pages the kernels run on). NULL when out of
 * memory; the caller frees with free(). */
void *ops_host_alloc(size_t bytes);

/* A prepared workload: inputs filled from the seeded generator, outputs
 * allocated (and poisoned), a plan fixed. */
struct ops_instance;
int ops_instance_new(const struct ops_workload *w, const struct ops_plan *plan,
		     uint64_t seed, const char *block, struct ops_instance **out,
		     struct opr_error *err);
void ops_instance_free(struct ops_instance *inst);
/* Runs the workload once on dev (really, or counting only in a dry run).
 * A real run first poisons every output, so that an element the operator
 * does not write fails the quality check. */
int ops_instance_run(struct ops_device *dev, struct ops_instance *inst,
		     struct opr_error *err);
/* The same without the poisoning: for timed repetitions of an instance that
 * a poisoned run has already checked. The poison is a memset of every
 * output, not the operator's work: inside a timing it added ~10% to the
 * permutes' host times (their outputs are tens of MiB). */
int ops_instance_run_timed(struct ops_device *dev, struct ops_instance *inst,
			   struct opr_error *err);
/* The final output tensor (owned by the instance). */
const void *ops_instance_output(const struct ops_instance *inst, size_t *bytes);
/* The instance's tensors in declaration order (inputs and outputs), for
 * digests: returns the count; tensor i's data and size through
 * ops_instance_tensor_at (data owned by the instance). */
size_t ops_instance_ntensors(const struct ops_instance *inst);
const void *ops_instance_tensor_at(const struct ops_instance *inst, size_t i,
				   const char **name, size_t *bytes, int *is_output);
/* Quality against the fp64 / exact integer reference: for float outputs the
 * relative L2 error, for requantised int8 the max |difference| in LSB. */
struct ops_quality {
	double rel_l2;
	double max_abs_lsb;
	int exact_int;                  /* integer accumulators matched exactly */
};
int ops_instance_quality(const struct ops_instance *inst, struct ops_quality *q,
			 struct opr_error *err);
/* Bytes of host memory the instance needs (checked against the memory cap
 * before allocating). */
uint64_t ops_workload_bytes(const struct ops_workload *w);

/* ---- the planner ------------------------------------------------------------ */

struct ops_plan_eval {
	struct ops_plan plan;
	int fits;                       /* within every capacity of the envelope */
	int rejected;                   /* not chosen: over capacity, or slower */
	char reason[160];               /* why rejected, or why chosen */
	struct ops_counters counters;   /* from a dry run */
	double model_ns;
	uint64_t launches;
	uint64_t global_bytes;          /* ops_global_bytes of the dry run's counters */
	uint64_t footprint_bytes;       /* peak SHARED per core */
	double reuse_ratio;             /* ops_reuse_ratio of the dry run's counters */
};
/* Enumerates candidate plans (fused as asked), evaluates each by dry run,
 * ranks the fitting ones by modelled time (best first), rejected ones after
 * with their reasons. *out is malloc'd; caller frees. */
int ops_plan_search(const struct ops_envelope *env, const struct ops_workload *w,
		    int fused, struct ops_plan_eval **out, size_t *n,
		    struct opr_error *err);
/* Evaluates one plan by dry run (pinned plans go through this). */
int ops_plan_evaluate(const struct ops_envelope *env, const struct ops_workload *w,
		      const struct ops_plan *plan, struct ops_plan_eval *out,
		      struct opr_error *err);

/* Chooses the plan to run: wanted (a pinned plan) when it fits, else the
 * fastest fitting plan of ops_plan_search (wanted == NULL: auto). fused is
 * forced into the plan. *fell_back is 1 when a pinned plan did not fit and was
 * replaced: the caller then notes it on its device (ops_note_fallback). reason
 * says why (e.g. the capacity overrun). OPR_ELIMIT when no plan fits. */
int ops_plan_resolve(const struct ops_envelope *env, const struct ops_workload *w,
		     const struct ops_plan *wanted, int fused, struct ops_plan *chosen,
		     int *fell_back, char *reason, size_t reason_len,
		     struct opr_error *err);

/* ---- PAPI SDE export -------------------------------------------------------- */

/* Registers the device's counters as sde:::opreview::<NAME> (GLOBAL_READ_BYTES,
 * SHARED_WRITE_BYTES, DMA_TRANSFERS, DMA_SPLITS, LAUNCHES, MACS_FP32, ...).
 * The exported values follow the device passed to ops_sde_bind. */
void ops_sde_register(void);
void ops_sde_bind(const struct ops_device *dev);
/* NULL-terminated list of the SDE counter names (without the prefix). */
const char *const *ops_sde_names(void);


#endif
