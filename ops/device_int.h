/* ops/device_int.h: internals of the device model shared by ops/device.c,
 * ops/model.c and ops/sde.c, plus the permute kernel entry used by its tests.
 * Never included outside ops/ and tests/. */
#ifndef OPS_DEVICE_INT_H
#define OPS_DEVICE_INT_H

#include "ops.h"

/* What one core did inside the current launch. ops[] are compute ops by
 * dtype (one MAC = 2 ops, one element op = 1 op). */
struct ops_core_acc {
	uint64_t ops[OPS_NDTYPES];
	uint64_t vec_ops;       /* element ops on the vector unit (vector_tops > 0) */
	uint64_t vec_half_ops;  /* those of them on fp16/bf16 data, when the
				 * envelope prices them apart (vector_half_tops > 0) */
	uint64_t work;          /* MACs + element ops */
	uint64_t shared_bytes;  /* DMA into/out of SHARED + compute reads/writes */
	uint64_t shared_compute_bytes; /* the compute reads/writes of shared_bytes */
	uint64_t global_bytes;  /* DMA into/out of GLOBAL */
	uint64_t global_read_bytes; /* the part of global_bytes read from GLOBAL */
	uint64_t transfers;
	uint64_t loads;         /* the transfers of them from GLOBAL */
	int active;             /* a tile, a transfer or compute was placed here */
	unsigned dtypes;        /* bit t: ops[t] was added to (the others are zero),
				 * so the time model skips the unused dtypes */
};

/* A live SHARED/LOCAL allocation: the core whose footprint it holds. */
struct ops_live_buf {
	enum ops_space space;
	int core;
	size_t bytes;
};

/* Constants of the time model for one envelope, computed once per device by
 * ops_model_prepare with the very expressions ops_model_launch evaluates, so
 * the modelled times are bit-identical (two divisions fewer per launch). */
struct ops_model_consts {
	double rate[OPS_NDTYPES];          /* ops_model_core_rate(env, t) */
	double vec_rate;                   /* vector_tops per core, ops/ns (0: none) */
	double vec_half_rate;              /* vector_half_tops per core, ops/ns */
	double gbw[OPS_MAX_CORES + 1];     /* global_bw_gbps / max(1, active cores) */
};

/* Host memory of a released SHARED/LOCAL buffer, kept for the next
 * allocation of the same size. Host side only: footprints, peaks and
 * counters are those of a fresh allocation. */
#define OPS_POOL_SLOTS 16
#define OPS_POOL_MAX_BYTES ((size_t)16 << 20) /* pooled host bytes at most */
struct ops_host_block {
	void *data;
	size_t bytes;
};

struct ops_device {
	struct ops_envelope env;
	int dry_run;
	uint64_t serial;        /* unique per device of the process (launch memos) */
	uint64_t replays;       /* launches replayed from a memo (never reset) */
	struct ops_model_consts mc;
	/* host execution only, never counted */
	struct ops_host_block pool[OPS_POOL_SLOTS]; /* oldest first */
	int npool;
	size_t pool_bytes;
	uint64_t stream_min_bytes; /* min(LLC, 8x L2) of the host (0: never stream) */
	int stream_global;         /* this launch streams its GLOBAL writes */
	struct ops_counters c;
	uint64_t footprint[OPS_MAX_CORES][OPS_NSPACES]; /* live on-chip bytes */
	struct ops_live_buf *live;
	size_t nlive, caplive;
	struct ops_launch_rec *recs;
	size_t nrecs, caprecs;
	/* the open launch, if any */
	int in_launch;
	int core;               /* current core: tile % cores, 0 outside a launch */
	char launch_name[48];
	int double_buffer;
	int one_pass;           /* ops_launch_one_pass was called */
	int alt_kernel;         /* ops_launch_alt_kernel was called */
	struct ops_core_acc acc[OPS_MAX_CORES];
	uint64_t acc_mask[OPS_CORE_WORDS]; /* bit c: acc[c].active (the others are all zero) */
	int tile1_off;          /* tests only: ops_launch_tile1 always declines */
	/* the last one-tile launch's record: its modelled times are a function
	 * of (dtype, elements, bytes, double_buffer, one_pass) under this
	 * device's fixed envelope, so a repeated tiny call copies them instead
	 * of recomputing */
	struct {
		int valid, double_buffer, one_pass, first;
		enum ops_kernel_class fam;
		enum ops_dtype dtype;
		uint64_t elem_ops, bytes;
		struct ops_launch_rec rec;
	} tile1_last;
};

/* ---- one-tile launches ------------------------------------------------------ */

/* The whole launch of an element-wise kernel whose tensor is one rank-1 tile
 * of n elements, as a kernel would issue it through the public calls:
 *   ops_buf_alloc(SHARED, n * elem_bytes)          outside the launch, core 0
 *   ops_launch_begin(name, double_buffer); ops_tile_begin(0)
 *   ops_launch_one_pass                            when one_pass
 *   ops_dma_split(SHARED <- GLOBAL x, [n] strides xs -> 1)
 *   ops_compute(dtype, 0 MACs, elem_ops, n * elem_bytes read, n * elem_bytes written)
 *   kernel(ctx, tile, n)                          in place, real runs only
 *   ops_dma_split(GLOBAL y <- SHARED, [n] strides 1 -> ys)
 *   ops_launch_end; ops_buf_release
 * ops_launch_tile1 does all of it in one call, with the tile on the host
 * stack, and leaves the same counters, peak and launch record, bit for bit
 * (tests/test_activation.c compares the two on random small calls). It is
 * for the tiny calls, where the calls themselves were the cost: a one-element
 * activation went from ~1080 to ~400 instructions. */
#define OPS_TILE1_MAX_BYTES 256
#define OPS_NAME_BYTES sizeof(((struct ops_launch_rec *)0)->name)
struct ops_tile1 {
	const char *name;       /* the launch's name, zero-padded to OPS_NAME_BYTES */
	int double_buffer;
	int one_pass;
	enum ops_dtype dtype;
	size_t elem_bytes;
	int64_t n;
	const void *x;          /* GLOBAL, stride xs elements (NULL in a dry run) */
	int64_t xs;
	void *y;                /* GLOBAL, stride ys elements (NULL in a dry run) */
	int64_t ys;
	uint64_t elem_ops;
	void (*kernel)(const void *ctx, void *tile, int64_t n);
	/* x straight into y, for a one-pass launch whose x and y do not
	 * overlap partly (NULL: staged through the tile as any other). On the
	 * host the staging was two stores the kernel's vector loads and the
	 * copy out then waited on (a load over a store of another width is
	 * not forwarded): make bench's one-element gelu went from 56 to 38 ns
	 * a call on the AVX-512 VM. Counted the same either way. */
	void (*pass)(const void *ctx, const void *x, void *y, int64_t n);
	const void *ctx;
};
/* 1 when the launch was done; 0 when this path does not apply (a launch is
 * open, the tile is over OPS_TILE1_MAX_BYTES or SHARED's free capacity or
 * max_last_dim, the record table is full, data is missing): nothing was
 * counted and the caller takes the general path, which reports any error. */
int ops_launch_tile1(struct ops_device *dev, const struct ops_tile1 *k);

/* Host hint for the open launch (no effect on counters or the model): it
 * writes global_write_bytes into GLOBAL. When that exceeds the smaller of
 * the host's last-level cache and 8x its L2 (ops/device.c says why), the
 * output is unlikely to stay cached for its consumer, so
 * DMA writes into GLOBAL store whole cache lines of contiguous runs with
 * non-temporal stores (no read for ownership: 2 bytes of DRAM traffic per
 * byte copied instead of 3). Cleared by ops_launch_begin and ops_launch_end. */
void ops_launch_stream_hint(struct ops_device *dev, uint64_t global_write_bytes);
/* Whether the current launch streams its GLOBAL writes (the hint above took):
 * a kernel that writes GLOBAL itself, bypassing ops_dma, asks here instead of
 * reading the device's fields. Inline: it is asked once per tile. */
static inline int ops_launch_streams_global(const struct ops_device *dev)
{
	return dev->stream_global;
}

/* Marks the open launch one-pass: its tiles are element-wise over contiguous
 * GLOBAL data (each DMA in, one compute, each DMA out), so the host runs
 * each tile straight from GLOBAL to GLOBAL in one pass. The kernel counts its
 * transfers with ops_dma_split_count and moves the bytes itself, through
 * registers. Counters are the accelerator's, unchanged; the record says
 * one_pass, and the model of a serial-DMA host prices the launch as
 * overlapped (ops/model.c). Why: a host has no DMA engine beside its core, so
 * staging a tile through a SHARED buffer is two extra copies an accelerator
 * would hide behind compute; on this project's reference host they were 40%
 * of a 64 MiB SiLU (a one-pass kernel streams DRAM while it computes). Set
 * in dry runs too, so that records stay equal. Cleared by ops_launch_begin
 * and ops_launch_end. */
void ops_launch_one_pass(struct ops_device *dev);

/* Marks the open launch as its family's other kernel: a permute whose output
 * rows are contiguous runs of the input (no transpose), or a conv2d as an
 * implicit GEMM. On a GPU each is another kernel (ops/cuda/permute.cu, the
 * row copy; ops/cuda/conv.cu, the tensor-core GEMM), so a GPU envelope
 * prices it as the permute-rows or conv-gemm family (ops.h). No effect on
 * counters; cleared by ops_launch_begin and ops_launch_end. */
void ops_launch_alt_kernel(struct ops_device *dev);

/* A launch's whole effect on the device, kept to be replayed: a kernel
 * whose counting is a function of its plan alone (every transfer counted,
 * none moved) runs its repeats without counting and adds what the first
 * one counted. What a launch adds depends on the device only through its
 * envelope (fixed per device), whether it is the run's first launch and
 * the on-chip buffers live when it begins, so a memo is taken only with
 * none live and replayed only on the device it came from (serial), with
 * none live and the same firstness. Why: counting was 7 of the 122 us of
 * the bench's bf16 conv on the host, timed as the operator's. */
struct ops_launch_memo {
	int valid;
	int first;
	uint64_t serial;                /* the device's (ops_device_new) */
	struct ops_counters delta;      /* what it added; peak: its own */
	struct ops_launch_rec rec;
};
/* Before the launch to keep: *before the device's counters (and its peak
 * cleared, to see the launch's own). 0 when none may be taken (a dry run,
 * an open launch, live on-chip buffers). */
int ops_launch_memo_begin(struct ops_device *dev, struct ops_counters *before);
/* After that launch ended: its effect into m where it succeeded (ok),
 * else m invalid; the peak restored either way. */
void ops_launch_memo_end(struct ops_device *dev, const struct ops_counters *before, int ok,
			 struct ops_launch_memo *m);
/* 1 when m may stand for a launch on dev now (ops_launch_replay). */
int ops_launch_memo_fits(const struct ops_device *dev, const struct ops_launch_memo *m);
/* Adds m's effect, as if the launch ran and counted (ops_launch_memo_fits
 * checked). */
int ops_launch_replay(struct ops_device *dev, const struct ops_launch_memo *m,
		      struct opr_error *err);
/* Launches replayed on dev so far (tests: the memo was used). */
static inline uint64_t ops_device_replays(const struct ops_device *dev)
{
	return dev->replays;
}

/* Counts one transfer exactly as ops_dma_split does (the same checks,
 * splits, counters and errors), moving nothing: for a one-pass kernel, which
 * moves the bytes itself. */
int ops_dma_split_count(struct ops_device *dev, enum ops_space dst_space,
			enum ops_space src_space, const struct ops_dma_desc *d,
			struct opr_error *err);

/* Fills rec's time terms from the per-core accumulators acc[0..cores-1]
 * (ops/model.c). rec->name is set by the caller. mc: the envelope's
 * constants from ops_model_prepare, or NULL to compute them here. mask:
 * OPS_CORE_WORDS words, bit c%64 of word c/64 set for every active core,
 * when every inactive acc[c] is all zero (the device keeps it so), which lets
 * the sums skip them; NULL to scan them all.
 * Only the dtypes marked in acc[c].dtypes enter the compute term. */
/* fam: the launch's kernel family (ops_kernel_class_of); it matters only
 * where the envelope has that family's cost (a GPU envelope). first: the
 * first launch of the run (launch_first_us). */
void ops_model_launch(const struct ops_envelope *env, const struct ops_model_consts *mc,
		      const struct ops_core_acc *acc, const uint64_t *mask, int double_buffer,
		      int one_pass, enum ops_kernel_class fam, int first,
		      struct ops_launch_rec *rec);
/* ops_model_launch of a launch with one active core, whose work is a. */
void ops_model_launch_one(const struct ops_envelope *env, const struct ops_model_consts *mc,
			  const struct ops_core_acc *a, int double_buffer, int one_pass,
			  enum ops_kernel_class fam, int first, struct ops_launch_rec *rec);
void ops_model_prepare(const struct ops_envelope *env, struct ops_model_consts *mc);
/* Compute rate of one core in ops/ns for dtype t (ops/model.c). */
double ops_model_core_rate(const struct ops_envelope *env, enum ops_dtype t);

/* ---- permute kernel (ops/permute.c) ------------------------------------------ */

/* One permute (y = x permuted: output dim i is input dim perm[i]), optionally
 * followed by an activation, fused (one launch, applied to the tile in SHARED)
 * or unfused (a second launch reading y back from GLOBAL). */
struct ops_permute_job {
	int rank;                       /* 0..8 */
	int64_t dims[OPS_MAX_RANK];     /* input dims */
	int perm[OPS_MAX_RANK];
	enum ops_dtype dtype;           /* 1, 2 or 4 bytes; activations need floats */
	int with_act;
	enum ops_act act;
	int fused;
	int64_t tile_rows, tile_cols;   /* 0: default for the envelope */
	int double_buffer;
};
/* The permutation coalesced: the output's dims o[] (innermost last) after dims
 * of 1 are dropped and runs contiguous in the input are merged, with each one's
 * input stride s[] and output stride os[], in elements; n = elements in all. At
 * least one dim (r >= 1). The host's and the CUDA backend's permutes both walk it. */
struct ops_permute_dims {
	int r;
	int64_t n;
	int64_t o[OPS_MAX_RANK], s[OPS_MAX_RANK], os[OPS_MAX_RANK];
};
void ops_permute_coalesce(const struct ops_permute_job *j, struct ops_permute_dims *g);
/* Runs the job on dev; x and y are host tensors standing for GLOBAL (NULL is
 * fine in a dry run). 0 or a negative code. */
int ops_permute_exec(struct ops_device *dev, const struct ops_permute_job *job,
		     const void *x, void *y, struct opr_error *err);
/* The closed-form counts of the job under env: DMA transfers, splits, tiles
 * and launches, as ops_permute_exec will count them. 0 or OPR_EINPUT. */
struct ops_permute_counts {
	uint64_t transfers, splits, tiles, launches;
	int64_t tile_rows, tile_cols;   /* the resolved tile */
};
int ops_permute_expect(const struct ops_envelope *env, const struct ops_permute_job *job,
		       struct ops_permute_counts *out, struct opr_error *err);

#endif
