/* ops/device.c: the explicit-address-space device: buffers per space with
 * per-core SHARED/LOCAL footprints, strided DMA with exact byte and transfer
 * counters, launches and tiles. Bytes and elements throughout; the time model
 * of a launch is in ops/model.c. How the host executes it (pooled on-chip
 * buffers, streaming stores for large GLOBAL writes) never changes a count. */
#include "device_int.h"
#include "isa_int.h"

#include <immintrin.h> /* _mm_sfence (SSE, baseline x86-64) */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Under AddressSanitizer a pooled buffer is poisoned while it waits, so a use
 * after ops_buf_release is still reported as it would be after free(). */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define POOL_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define POOL_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POOL_POISON(p, n) ((void)(p), (void)(n))
#define POOL_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

static int bad_pos(double v)
{
	return !(v > 0.0) || !isfinite(v);
}

static int bad_nonneg(double v)
{
	return !(v >= 0.0) || !isfinite(v);
}

/* A one_pass share is unset (0) or in (0, 1]. */
static int bad_share(const double *share)
{
	for (int f = 0; f < OPS_NKCLASSES; f++)
		if (!(share[f] >= 0.0 && share[f] <= 1.0))
			return 1;
	return 0;
}

static int check_envelope(const struct ops_envelope *e, struct opr_error *err)
{
	const char *what = NULL;

	if (e->cores < 1 || e->cores > OPS_MAX_CORES)
		return opr_error_set(err, OPR_EINPUT,
				     "envelope 'cores' %d out of range 1..%d", e->cores,
				     OPS_MAX_CORES);
	if (bad_pos(e->clock_scale))
		what = "clock_scale";
	else if (bad_pos(e->global_bw_gbps))
		what = "global_bw_gbps";
	else if (bad_nonneg(e->global_read_bw_gbps))
		what = "global_read_bw_gbps";
	else if (bad_nonneg(e->global_write_bw_gbps))
		what = "global_write_bw_gbps";
	else if (bad_share(e->one_pass_share))
		what = "one_pass share";
	else if (bad_pos(e->global_capacity_gib))
		what = "global_capacity_gib";
	else if (bad_pos(e->shared_capacity_kib))
		what = "shared_capacity_kib";
	else if (bad_pos(e->shared_bw_gbps))
		what = "shared_bw_gbps";
	else if (bad_pos(e->local_capacity_kib))
		what = "local_capacity_kib";
	else if (bad_nonneg(e->dma_setup_ns))
		what = "dma_setup_ns";
	else if (bad_nonneg(e->launch_overhead_us))
		what = "launch_overhead_us";
	else if (bad_pos(e->tops[OPS_F32]))
		what = "tops fp32";
	else if (bad_pos(e->tops[OPS_F16]))
		what = "tops fp16";
	else if (bad_pos(e->tops[OPS_BF16]))
		what = "tops bf16";
	else if (bad_pos(e->tops[OPS_S8]))
		what = "tops int8";
	if (what)
		return opr_error_set(err, OPR_EINPUT, "envelope '%s' must be a positive number",
				     what);
	if (bad_nonneg(e->vector_tops) || bad_nonneg(e->vector_half_tops))
		return opr_error_set(err, OPR_EINPUT,
				     "envelope vector rates must be finite and not negative");
	if (e->vector_half_tops > 0 && !(e->vector_tops > 0))
		return opr_error_set(err, OPR_EINPUT,
				     "envelope 'vector_half_tops' needs 'vector_tops'");
	if (e->dma_max_last_dim < 1)
		return opr_error_set(err, OPR_EINPUT,
				     "envelope 'dma_max_last_dim' must be at least 1");
	if (e->dma_engines < 1)
		return opr_error_set(err, OPR_EINPUT,
				     "envelope 'dma_engines' must be at least 1");
	return 0;
}

/* "32768K" -> 33554432; 0 when unreadable. */
static uint64_t read_cache_size(const char *path)
{
	char buf[32];
	FILE *f = fopen(path, "r");
	uint64_t v = 0;

	if (!f)
		return 0;
	if (fgets(buf, sizeof buf, f)) {
		char *end;
		unsigned long long n = strtoull(buf, &end, 10);
		if (*end == 'K')
			n <<= 10;
		else if (*end == 'M')
			n <<= 20;
		v = n;
	}
	fclose(f);
	return v;
}

/* Bytes of cpu0's largest cache at `level` that sysfs lists (its view of the
 * cache topology, which in a virtual machine can differ from what sysconf
 * derives from CPUID); 0 when sysfs lists none. */
static uint64_t sysfs_cache_bytes(int level)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++) {
		char path[80];
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
		if ((int)read_cache_size(path) != level)
			continue;
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		uint64_t s = read_cache_size(path);
		if (s > v)
			v = s;
	}
	return v;
}

/* Output bytes above which a launch streams its GLOBAL writes, read once:
 * the smaller of the last-level cache and 8x the core's L2. Why not the
 * last-level cache alone: it is shared by every core of the socket, and a
 * large one (this project's reference VM reports 480 MiB of a server's L3
 * to 2 vCPUs) keeps little of an output once the other tenants run, while
 * the write-allocate reads that ordinary stores cost are certain. A 64 MiB
 * ReLU there ran at 0.95-1.05x memcpy with ordinary stores and at 1.5x with
 * streaming stores. 8x L2 (16 MiB on a 2 MiB L2) leaves outputs that a
 * consumer can still find in a typical 16-64 MiB L3 cached. Falls back on
 * sysconf, then 32 MiB. */
static uint64_t host_stream_min_bytes(void)
{
	static _Atomic uint64_t cached;
	uint64_t v = atomic_load_explicit(&cached, memory_order_relaxed);

	if (v)
		return v;
	uint64_t llc = 0, l2 = sysfs_cache_bytes(2);
	for (int level = 3; level <= 4; level++) {
		uint64_t s = sysfs_cache_bytes(level);
		if (s > llc)
			llc = s;
	}
	if (!llc) {
		long s = sysconf(_SC_LEVEL3_CACHE_SIZE);
		llc = s > 0 ? (uint64_t)s : 0;
	}
	if (!l2) {
		long s = sysconf(_SC_LEVEL2_CACHE_SIZE);
		l2 = s > 0 ? (uint64_t)s : 0;
	}
	v = llc ? llc : l2 ? 8 * l2 : (uint64_t)32 << 20;
	if (l2 && 8 * l2 < v)
		v = 8 * l2;
	atomic_store_explicit(&cached, v, memory_order_relaxed);
	return v;
}

static uint64_t device_serials;

int ops_device_new(const struct ops_envelope *env, int dry_run,
		   struct ops_device **out, struct opr_error *err)
{
	struct ops_device *dev;
	int rc;

	*out = NULL;
	if (!env)
		return opr_error_set(err, OPR_EINPUT, "no envelope given");
	rc = check_envelope(env, err);
	if (rc)
		return rc;
	dev = calloc(1, sizeof *dev);
	if (!dev)
		return opr_error_set(err, OPR_ENOMEM, "out of memory for the device");
	dev->env = *env;
	dev->env.name[sizeof dev->env.name - 1] = '\0';
	dev->env.power_mode[sizeof dev->env.power_mode - 1] = '\0';
	dev->dry_run = dry_run != 0;
	dev->serial = __atomic_add_fetch(&device_serials, 1, __ATOMIC_RELAXED);
	ops_model_prepare(&dev->env, &dev->mc);
	dev->stream_min_bytes = dev->dry_run ? 0 : host_stream_min_bytes();
	*out = dev;
	return 0;
}

void ops_device_free(struct ops_device *dev)
{
	if (!dev)
		return;
	for (int i = 0; i < dev->npool; i++) {
		POOL_UNPOISON(dev->pool[i].data, dev->pool[i].bytes);
		free(dev->pool[i].data);
	}
	free(dev->live);
	free(dev->recs);
	free(dev);
}

int ops_device_dry_run(const struct ops_device *dev)
{
	return dev->dry_run;
}

const struct ops_envelope *ops_device_envelope(const struct ops_device *dev)
{
	return &dev->env;
}

/* Buffers stay allocated across a reset, so the peak restarts from the
 * footprint they still hold. */
void ops_device_reset(struct ops_device *dev)
{
	uint64_t peak = 0;

	memset(&dev->c, 0, sizeof dev->c);
	dev->nrecs = 0;
	dev->in_launch = 0;
	dev->core = 0;
	dev->stream_global = 0;
	memset(dev->acc, 0, (size_t)dev->env.cores * sizeof dev->acc[0]);
	memset(dev->acc_mask, 0, sizeof dev->acc_mask);
	for (int c = 0; c < dev->env.cores; c++)
		if (dev->footprint[c][OPS_SHARED] > peak)
			peak = dev->footprint[c][OPS_SHARED];
	dev->c.peak_shared_bytes = peak;
}

const struct ops_counters *ops_device_counters(const struct ops_device *dev)
{
	return &dev->c;
}

const struct ops_launch_rec *ops_device_launches(const struct ops_device *dev, size_t *n)
{
	*n = dev->nrecs;
	return dev->recs;
}

/* ---- buffers ---------------------------------------------------------------- */

static uint64_t space_capacity(const struct ops_device *dev, enum ops_space s)
{
	double kib = s == OPS_SHARED ? dev->env.shared_capacity_kib : dev->env.local_capacity_kib;

	return (uint64_t)(kib * 1024.0);
}

/* The pool: on-chip buffers are small (bounded by the per-core capacity) and
 * allocated and released around every launch, so their host memory is kept
 * for the next allocation of the same size instead of going back to malloc.
 * Returns a pooled block of exactly bytes (64-byte aligned), or NULL. */
static void *pool_take(struct ops_device *dev, size_t bytes)
{
	for (int i = dev->npool; i-- > 0;) {
		if (dev->pool[i].bytes != bytes)
			continue;
		void *p = dev->pool[i].data;
		dev->pool_bytes -= bytes;
		dev->npool--;
		for (int k = i; k < dev->npool; k++)
			dev->pool[k] = dev->pool[k + 1];
		POOL_UNPOISON(p, bytes);
		return p;
	}
	return NULL;
}

/* Keeps p for reuse, dropping the oldest blocks past the slot and byte
 * limits; frees it when it alone is over the byte limit. */
static void pool_put(struct ops_device *dev, void *p, size_t bytes)
{
	if (bytes > OPS_POOL_MAX_BYTES) {
		free(p);
		return;
	}
	while (dev->npool > 0 && (dev->npool == OPS_POOL_SLOTS ||
				  dev->pool_bytes + bytes > OPS_POOL_MAX_BYTES)) {
		POOL_UNPOISON(dev->pool[0].data, dev->pool[0].bytes);
		free(dev->pool[0].data);
		dev->pool_bytes -= dev->pool[0].bytes;
		dev->npool--;
		memmove(&dev->pool[0], &dev->pool[1], (size_t)dev->npool * sizeof dev->pool[0]);
	}
	POOL_POISON(p, bytes);
	dev->pool[dev->npool].data = p;
	dev->pool[dev->npool].bytes = bytes;
	dev->npool++;
	dev->pool_bytes += bytes;
}

int ops_buf_alloc(struct ops_device *dev, enum ops_space space, size_t bytes,
		  struct ops_buf *out, struct opr_error *err)
{
	int core = dev->in_launch ? dev->core : 0;

	out->space = space;
	out->bytes = 0;
	out->data = NULL;
	if ((unsigned)space >= OPS_NSPACES)
		return opr_error_set(err, OPR_EINPUT, "unknown space %d", (int)space);
	if (space != OPS_GLOBAL) {
		uint64_t cap = space_capacity(dev, space);
		uint64_t now = dev->footprint[core][space] + bytes;
		if (now > cap)
			return opr_error_set(err, OPR_ELIMIT,
					     "%s footprint %.1f KiB exceeds capacity %.1f KiB on core %d",
					     ops_space_name(space), (double)now / 1024.0,
					     (double)cap / 1024.0, core);
		if (dev->nlive == dev->caplive) {
			size_t cap2 = dev->caplive ? 2 * dev->caplive : 16;
			struct ops_live_buf *p = realloc(dev->live, cap2 * sizeof *p);
			if (!p)
				return opr_error_set(err, OPR_ENOMEM,
						     "out of memory for the buffer table");
			dev->live = p;
			dev->caplive = cap2;
		}
	}
	if (!dev->dry_run && bytes > 0) {
		void *p = space != OPS_GLOBAL ? pool_take(dev, bytes) : NULL;
		if (!p && posix_memalign(&p, 64, bytes) != 0)
			return opr_error_set(err, OPR_ENOMEM,
					     "cannot allocate %zu bytes in %s", bytes,
					     ops_space_name(space));
		out->data = p;
	}
	if (space != OPS_GLOBAL) {
		dev->live[dev->nlive].space = space;
		dev->live[dev->nlive].core = core;
		dev->live[dev->nlive].bytes = bytes;
		dev->nlive++;
		dev->footprint[core][space] += bytes;
		if (space == OPS_SHARED && dev->footprint[core][space] > dev->c.peak_shared_bytes)
			dev->c.peak_shared_bytes = dev->footprint[core][space];
	}
	out->bytes = bytes;
	return 0;
}

/* The buffer does not say which core holds it, and in a dry run it has no
 * address, so the footprint it gave back is found by (space, bytes): the most
 * recent live allocation of that size on the current core, else on any core.
 * The same rule in both modes keeps dry and real counters identical. */
void ops_buf_release(struct ops_device *dev, struct ops_buf *buf)
{
	if (!buf)
		return;
	if (buf->data && buf->space != OPS_GLOBAL && (unsigned)buf->space < OPS_NSPACES)
		pool_put(dev, buf->data, buf->bytes);
	else
		free(buf->data);
	buf->data = NULL;
	if (buf->space != OPS_GLOBAL && (unsigned)buf->space < OPS_NSPACES) {
		int core = dev->in_launch ? dev->core : 0;
		size_t hit = dev->nlive;
		for (size_t i = dev->nlive; i-- > 0;) {
			const struct ops_live_buf *l = &dev->live[i];
			if (l->space != buf->space || l->bytes != buf->bytes)
				continue;
			if (l->core == core) {
				hit = i;
				break;
			}
			if (hit == dev->nlive)
				hit = i;
		}
		if (hit < dev->nlive) {
			struct ops_live_buf *l = &dev->live[hit];
			dev->footprint[l->core][l->space] -= l->bytes;
			if (hit + 1 < dev->nlive)
				memmove(l, l + 1, (dev->nlive - hit - 1) * sizeof *l);
			dev->nlive--;
		}
	}
	buf->bytes = 0;
}

/* ---- DMA ---------------------------------------------------------------------- */

/* dst[j * ldd + i] = src[i * lds + j] for i < rows, j < cols: elements of
 * 1, 2 and 4 bytes by the chosen kernel path (register-blocked transposes). */

/* 8-byte elements: cache-blocked scalar copies (no operator moves them). */
#define TR_BLOCK 64
static void transpose_u64(const uint64_t *src, int64_t lds, uint64_t *dst, int64_t ldd,
			  int64_t rows, int64_t cols)
{
	for (int64_t i0 = 0; i0 < rows; i0 += TR_BLOCK)
		for (int64_t j0 = 0; j0 < cols; j0 += TR_BLOCK) {
			int64_t i1 = i0 + TR_BLOCK < rows ? i0 + TR_BLOCK : rows;
			int64_t j1 = j0 + TR_BLOCK < cols ? j0 + TR_BLOCK : cols;
			for (int64_t i = i0; i < i1; i++)
				for (int64_t j = j0; j < j1; j++)
					dst[j * ldd + i] = src[i * lds + j];
		}
}

static void transpose_any(size_t eb, const void *src, int64_t lds, void *dst, int64_t ldd,
			  int64_t rows, int64_t cols)
{
	switch (eb) {
	case 1:
		ops_kern->transpose[0](src, lds, dst, ldd, rows, cols);
		break;
	case 2:
		ops_kern->transpose[1](src, lds, dst, ldd, rows, cols);
		break;
	case 4:
		ops_kern->transpose[2](src, lds, dst, ldd, rows, cols);
		break;
	default:
		transpose_u64(src, lds, dst, ldd, rows, cols);
		break;
	}
}

/* memcpy(d, s, n) with the whole 64-byte lines of d written by
 * non-temporal stores; the caller fences. */
static inline void stream_bytes(unsigned char *d, const unsigned char *s, size_t n)
{
	ops_kern->stream_bytes(d, s, n);
}

#define STREAM_MIN_ROW 256 /* bytes: shorter rows are mostly partial lines */

/* One row of n elements with element strides ss and ds; stream: write a
 * long contiguous row with non-temporal stores. */
static inline __attribute__((always_inline)) void copy_row(size_t eb, const unsigned char *s, int64_t ss, unsigned char *d,
		     int64_t ds, int64_t n, int stream)
{
	if (ss == 1 && ds == 1 && n == 1) {
		switch (eb) { /* fixed sizes: inline moves, no library call */
		case 1:
			*d = *s;
			return;
		case 2:
			memcpy(d, s, 2);
			return;
		case 4:
			memcpy(d, s, 4);
			return;
		case 8:
			memcpy(d, s, 8);
			return;
		default:
			break;
		}
	}
	if (ss == 1 && ds == 1) {
		if (stream && (size_t)n * eb >= STREAM_MIN_ROW)
			stream_bytes(d, s, (size_t)n * eb);
		else
			memcpy(d, s, (size_t)n * eb);
		return;
	}
	switch (eb) {
	case 1:
		for (int64_t j = 0; j < n; j++)
			d[j * ds] = s[j * ss];
		break;
	case 2:
		for (int64_t j = 0; j < n; j++)
			memcpy(d + j * ds * 2, s + j * ss * 2, 2);
		break;
	case 4:
		for (int64_t j = 0; j < n; j++)
			memcpy(d + j * ds * 4, s + j * ss * 4, 4);
		break;
	case 8:
		for (int64_t j = 0; j < n; j++)
			memcpy(d + j * ds * 8, s + j * ss * 8, 8);
		break;
	default:
		for (int64_t j = 0; j < n; j++)
			memcpy(d + j * ds * (int64_t)eb, s + j * ss * (int64_t)eb, eb);
		break;
	}
}

/* The real strided copy of a validated descriptor, padded to rank 4. When the
 * two innermost dimensions form a transpose (one side contiguous along the
 * last dimension, the other along the one before) the plane is copied with
 * blocked transposes instead of a strided element loop. */
static void dma_copy(void *dst, const void *src, const struct ops_dma_desc *d, int stream)
{
	int64_t sh[4], ss[4], ds[4];
	const size_t eb = d->elem_bytes;
	const int pad = OPS_DMA_MAX_RANK - d->rank;

	for (int k = 0; k < 4; k++) {
		if (k < pad) {
			sh[k] = 1;
			ss[k] = ds[k] = 0;
		} else {
			sh[k] = d->shape[k - pad];
			ss[k] = d->src_stride[k - pad];
			ds[k] = d->dst_stride[k - pad];
		}
	}
	/* rows contiguous on both sides and laid end to end on both sides are
	 * one row (a whole-width tile); then, innermost contiguous, whole
	 * planes of rows go to the path's row copy in one call */
	if (ss[3] == 1 && ds[3] == 1 && ss[2] == sh[3] && ds[2] == sh[3]) {
		sh[3] *= sh[2];
		sh[2] = 1;
	}
	if (ss[3] == 1 && ds[3] == 1 && !(stream && (size_t)sh[3] * eb >= STREAM_MIN_ROW)) {
		const int64_t e1 = (int64_t)eb;

		for (int64_t i0 = 0; i0 < sh[0]; i0++)
			for (int64_t i1 = 0; i1 < sh[1]; i1++)
				ops_kern->copy_rows((unsigned char *)dst + (i0 * ds[0] + i1 * ds[1]) * e1,
						    ds[2] * e1,
						    (const unsigned char *)src + (i0 * ss[0] + i1 * ss[1]) * e1,
						    ss[2] * e1, (size_t)sh[3] * eb, sh[2]);
		return;
	}
	int tr_read = ss[3] == 1 && ds[2] == 1 && ds[3] != 1 && sh[2] > 1 && sh[3] > 1;
	int tr_write = ds[3] == 1 && ss[2] == 1 && ss[3] != 1 && sh[2] > 1 && sh[3] > 1;
	const int64_t e = (int64_t)eb;

	for (int64_t i0 = 0; i0 < sh[0]; i0++)
		for (int64_t i1 = 0; i1 < sh[1]; i1++) {
			const unsigned char *s = (const unsigned char *)src +
						 (i0 * ss[0] + i1 * ss[1]) * e;
			unsigned char *t = (unsigned char *)dst + (i0 * ds[0] + i1 * ds[1]) * e;
			if (tr_read) {
				/* src rows along dim 2, contiguous along dim 3 */
				transpose_any(eb, s, ss[2], t, ds[3], sh[2], sh[3]);
				continue;
			}
			if (tr_write) {
				/* dst rows along dim 2; read src as rows along dim 3 */
				transpose_any(eb, s, ss[3], t, ds[2], sh[3], sh[2]);
				continue;
			}
			for (int64_t i2 = 0; i2 < sh[2]; i2++)
				copy_row(eb, s + i2 * ss[2] * e, ss[3], t + i2 * ds[2] * e,
					 ds[3], sh[3], stream);
		}
}

static inline __attribute__((always_inline)) int check_desc(const struct ops_device *dev, const struct ops_dma_desc *d,
		      int64_t *elems, struct opr_error *err)
{
	int64_t n = 1;

	if (!d)
		return opr_error_set(err, OPR_EINPUT, "no DMA descriptor given");
	if (d->rank < 1 || d->rank > OPS_DMA_MAX_RANK)
		return opr_error_set(err, OPR_EINPUT, "DMA rank %d out of range 1..%d",
				     d->rank, OPS_DMA_MAX_RANK);
	if (d->elem_bytes == 0)
		return opr_error_set(err, OPR_EINPUT, "DMA element size must be positive");
	for (int k = 0; k < d->rank; k++) {
		if (d->shape[k] < 0)
			return opr_error_set(err, OPR_EINPUT,
					     "DMA dimension %d is negative (%lld)", k,
					     (long long)d->shape[k]);
		if (d->shape[k] == 0)
			n = 0;
		else if (n && __builtin_mul_overflow(n, d->shape[k], &n)) /* no division */
			return opr_error_set(err, OPR_ELIMIT, "DMA descriptor too large");
	}
	if (n && d->shape[d->rank - 1] > dev->env.dma_max_last_dim)
		return opr_error_set(err, OPR_ELIMIT,
				     "DMA last dimension %lld exceeds max_last_dim %lld",
				     (long long)d->shape[d->rank - 1],
				     (long long)dev->env.dma_max_last_dim);
	*elems = n;
	return 0;
}

/* One transfer of bytes in a core's launch accumulator: its GLOBAL and
 * SHARED traffic, a space on both ends counting twice (read and written).
 * Shared by count_transfer and ops_launch_tile1. */
static inline __attribute__((always_inline)) void acc_add_transfer(struct ops_core_acc *a,
								   enum ops_space dst_space,
								   enum ops_space src_space,
								   uint64_t bytes)
{
	a->active = 1;
	a->transfers++;
	a->loads += src_space == OPS_GLOBAL;
	a->global_bytes += bytes * (uint64_t)((src_space == OPS_GLOBAL) + (dst_space == OPS_GLOBAL));
	a->global_read_bytes += bytes * (uint64_t)(src_space == OPS_GLOBAL);
	a->shared_bytes += bytes * (uint64_t)((src_space == OPS_SHARED) + (dst_space == OPS_SHARED));
}

/* Compute of dtype t in a core's launch accumulator: MACs at the dtype's rate
 * (2 ops each); element ops on the vector unit when the envelope has one
 * (fp16/bf16 ones apart when it prices them apart), else one op each at the
 * dtype's rate; onchip_bytes read and written in SHARED/LOCAL. Shared by
 * ops_compute and ops_launch_tile1. */
static inline __attribute__((always_inline)) void acc_add_compute(const struct ops_envelope *env,
								  struct ops_core_acc *a,
								  enum ops_dtype t, uint64_t macs,
								  uint64_t elem_ops,
								  uint64_t onchip_bytes)
{
	a->active = 1;
	a->dtypes |= 1u << t;
	if (env->vector_tops > 0) {
		a->ops[t] += 2 * macs;
		if (env->vector_half_tops > 0 && (t == OPS_F16 || t == OPS_BF16))
			a->vec_half_ops += elem_ops;
		else
			a->vec_ops += elem_ops;
	} else {
		a->ops[t] += 2 * macs + elem_ops;
	}
	a->work += macs + elem_ops;
	a->shared_bytes += onchip_bytes;
	a->shared_compute_bytes += onchip_bytes;
}

/* Counts one transfer of bytes: bytes[src][dst], and on the current core
 * (inside a launch) its GLOBAL and SHARED traffic. */
static inline __attribute__((always_inline)) void count_transfer(struct ops_device *dev, enum ops_space dst_space,
			   enum ops_space src_space, uint64_t bytes)
{
	dev->c.bytes[src_space][dst_space] += bytes;
	dev->c.transfers++;
	if (!dev->in_launch)
		return;
	dev->acc_mask[dev->core >> 6] |= (uint64_t)1 << (dev->core & 63);
	acc_add_transfer(&dev->acc[dev->core], dst_space, src_space, bytes);
}

/* ops_dma, inlined into ops_dma_split (a small call issues two DMAs) */
static inline __attribute__((always_inline)) int
dma_one(struct ops_device *dev, enum ops_space dst_space, void *dst,
	enum ops_space src_space, const void *src, const struct ops_dma_desc *d,
	struct opr_error *err)
{
	int64_t n = 0;
	int rc;

	if ((unsigned)dst_space >= OPS_NSPACES || (unsigned)src_space >= OPS_NSPACES)
		return opr_error_set(err, OPR_EINPUT, "unknown DMA space");
	rc = check_desc(dev, d, &n, err);
	if (rc)
		return rc;
	if (n == 0)
		return 0; /* an empty descriptor moves nothing and is not issued */
	if (!dev->dry_run) {
		if (!dst || !src)
			return opr_error_set(err, OPR_EINTERNAL,
					     "DMA %s -> %s without a buffer in a real run",
					     ops_space_name(src_space), ops_space_name(dst_space));
		int stream = dev->stream_global && dst_space == OPS_GLOBAL;
		if (d->rank == 1) /* inline: the common small case */
			copy_row(d->elem_bytes, src, d->src_stride[0], dst, d->dst_stride[0],
				 d->shape[0], stream);
		else
			dma_copy(dst, src, d, stream);
		if (stream)
			_mm_sfence(); /* the streamed lines are ordered before what follows */
	}
	count_transfer(dev, dst_space, src_space, (uint64_t)n * d->elem_bytes);
	return 0;
}

int ops_dma(struct ops_device *dev, enum ops_space dst_space, void *dst,
	    enum ops_space src_space, const void *src,
	    const struct ops_dma_desc *d, struct opr_error *err)
{
	return dma_one(dev, dst_space, dst, src_space, src, d, err);
}

/* A descriptor [..., L] with L > M = max_last_dim becomes ceil(L / M)
 * descriptors [..., min(M, rest)], each one transfer; splits counts the
 * ceil(L / M) - 1 extra ones. */
/* The split itself, out of line so that the common unsplit call stays a
 * short function. */
static __attribute__((noinline)) int
dma_split_chunks(struct ops_device *dev, enum ops_space dst_space, void *dst,
		 enum ops_space src_space, const void *src, const struct ops_dma_desc *d,
		 struct opr_error *err)
{
	const int64_t m = dev->env.dma_max_last_dim;
	const int64_t len = d->shape[d->rank - 1];
	struct ops_dma_desc part;
	int64_t chunks;

	for (int k = 0; k < d->rank - 1; k++)
		if (d->shape[k] == 0)
			return ops_dma(dev, dst_space, dst, src_space, src, d, err);
	part = *d;
	chunks = (len + m - 1) / m;
	for (int64_t c = 0; c < chunks; c++) {
		int64_t off = c * m;
		int64_t es = (int64_t)d->elem_bytes;
		const unsigned char *s = src;
		unsigned char *t = dst;
		part.shape[d->rank - 1] = len - off < m ? len - off : m;
		if (s)
			s += off * d->src_stride[d->rank - 1] * es;
		if (t)
			t += off * d->dst_stride[d->rank - 1] * es;
		int rc = ops_dma(dev, dst_space, t, src_space, s, &part, err);
		if (rc)
			return rc;
	}
	dev->c.splits += (uint64_t)(chunks - 1);
	return 0;
}

/* ops_dma_split past its one-element fast path. */
static __attribute__((noinline)) int
dma_split_any(struct ops_device *dev, enum ops_space dst_space, void *dst,
	      enum ops_space src_space, const void *src, const struct ops_dma_desc *d,
	      struct opr_error *err)
{
	if (!d || d->rank < 1 || d->rank > OPS_DMA_MAX_RANK)
		return ops_dma(dev, dst_space, dst, src_space, src, d, err);
	if (d->shape[d->rank - 1] <= dev->env.dma_max_last_dim)
		return dma_one(dev, dst_space, dst, src_space, src, d, err);
	return dma_split_chunks(dev, dst_space, dst, src_space, src, d, err);
}

/* A one-element rank-1 descriptor (a scalar, or the last element of a
 * small tensor) is the whole DMA of a tiny kernel. For it the checks of
 * check_desc reduce to the rank, the element size and max_last_dim >= 1, the
 * copy is one fixed-size move (strides do not matter for one element) and
 * nothing is split, so this path makes no call and needs no stack frame: the
 * general one realigns the stack for its AVX copies and was a fifth of a
 * one-element activation. Same copy, same counts, same errors otherwise. */
int ops_dma_split(struct ops_device *dev, enum ops_space dst_space, void *dst,
		  enum ops_space src_space, const void *src,
		  const struct ops_dma_desc *d, struct opr_error *err)
{
	if (!d || d->rank != 1 || d->shape[0] != 1 || dev->env.dma_max_last_dim < 1 ||
	    (unsigned)dst_space >= OPS_NSPACES || (unsigned)src_space >= OPS_NSPACES)
		return dma_split_any(dev, dst_space, dst, src_space, src, d, err);
	const size_t eb = d->elem_bytes;
	if (!dev->dry_run) {
		if (!dst || !src)
			return dma_split_any(dev, dst_space, dst, src_space, src, d, err);
		switch (eb) {
		case 1:
			*(unsigned char *)dst = *(const unsigned char *)src;
			break;
		case 2:
			memcpy(dst, src, 2);
			break;
		case 4:
			memcpy(dst, src, 4);
			break;
		case 8:
			memcpy(dst, src, 8);
			break;
		default: /* other sizes (and 0, an error) take the general path */
			return dma_split_any(dev, dst_space, dst, src_space, src, d, err);
		}
		/* (a one-element row is never streamed, but the general path still
		 * fences a launch that streams its GLOBAL writes) */
		if (dev->stream_global && dst_space == OPS_GLOBAL)
			_mm_sfence();
	} else if (eb == 0) {
		return dma_split_any(dev, dst_space, dst, src_space, src, d, err);
	}
	count_transfer(dev, dst_space, src_space, (uint64_t)eb);
	return 0;
}

/* ---- launches ---------------------------------------------------------------- */

/* snprintf(d, cap, "%s", s) without the cost of the formatter (two of these
 * per launch were a quarter of a one-element call); the rest of d is zeroed,
 * so records compare equal byte for byte. strnlen and memcpy move the name
 * a vector at a time (a byte loop was two thirds of ops_launch_begin). */
static inline __attribute__((always_inline)) void copy_name(char *d, size_t cap, const char *s)
{
	memset(d, 0, cap); /* a constant size here: inline stores */
	memcpy(d, s, strnlen(s, cap - 1));
}

void ops_launch_one_pass(struct ops_device *dev)
{
	dev->one_pass = dev->in_launch;
}

int ops_dma_split_count(struct ops_device *dev, enum ops_space dst_space,
			enum ops_space src_space, const struct ops_dma_desc *d,
			struct opr_error *err)
{
	const int dry = dev->dry_run;

	dev->dry_run = 1; /* (a dry run checks and counts, and moves nothing) */
	int rc = dma_split_any(dev, dst_space, NULL, src_space, NULL, d, err);
	dev->dry_run = dry;
	return rc;
}

void ops_launch_stream_hint(struct ops_device *dev, uint64_t global_write_bytes)
{
	dev->stream_global = dev->in_launch && dev->stream_min_bytes > 0 &&
			     global_write_bytes > dev->stream_min_bytes;
}

int ops_launch_begin(struct ops_device *dev, const char *name, int double_buffer,
		     struct opr_error *err)
{
	if (dev->in_launch)
		return opr_error_set(err, OPR_EINTERNAL,
				     "launch '%s' begun inside launch '%s'", name ? name : "",
				     dev->launch_name);
	dev->in_launch = 1;
	dev->core = 0;
	dev->double_buffer = double_buffer != 0;
	dev->one_pass = 0;
	dev->alt_kernel = 0;
	dev->stream_global = 0;
	copy_name(dev->launch_name, sizeof dev->launch_name, name ? name : "");
	/* acc[] is all zero here: ops_device_reset clears it, nothing outside a
	 * launch writes it, and ops_launch_end clears what its launch used */
	dev->c.launches++;
	return 0;
}

void ops_tile_begin(struct ops_device *dev, int64_t tile)
{
	dev->c.tiles++;
	if (!dev->in_launch)
		return;
	/* (no 64-bit division for the first tiles: one is a third of a small
	 * launch's bookkeeping) */
	if (tile >= 0 && tile < dev->env.cores)
		dev->core = (int)tile;
	else
		dev->core = (int)(tile % dev->env.cores);
	if (dev->core < 0)
		dev->core += dev->env.cores;
	dev->acc[dev->core].active = 1;
	dev->acc_mask[dev->core >> 6] |= (uint64_t)1 << (dev->core & 63);
}

/* One MAC is 2 ops and one element op 1 op at the dtype's rate; outside a
 * launch the work is counted (on core 0) but enters no launch record. */
void ops_compute(struct ops_device *dev, enum ops_dtype t, uint64_t macs,
		 uint64_t elem_ops, uint64_t read_bytes, uint64_t write_bytes)
{
	int core = dev->in_launch ? dev->core : 0;

	if ((unsigned)t >= OPS_NDTYPES)
		t = OPS_F32;
	dev->c.macs[t] += macs;
	dev->c.elem_ops += elem_ops;
	dev->c.compute_read_bytes += read_bytes;
	dev->c.compute_write_bytes += write_bytes;
	dev->c.core_work[core] += macs + elem_ops;
	if (!dev->in_launch)
		return;
	dev->acc_mask[core >> 6] |= (uint64_t)1 << (core & 63);
	acc_add_compute(&dev->env, &dev->acc[core], t, macs, elem_ops, read_bytes + write_bytes);
}

/* Room for one more launch record. */
static int recs_grow(struct ops_device *dev, struct opr_error *err)
{
	size_t cap = dev->caprecs ? 2 * dev->caprecs : 16;
	struct ops_launch_rec *p = realloc(dev->recs, cap * sizeof *p);

	if (!p)
		return opr_error_set(err, OPR_ENOMEM, "out of memory for launch records");
	dev->recs = p;
	dev->caprecs = cap;
	return 0;
}

int ops_launch_end(struct ops_device *dev, struct opr_error *err)
{
	struct ops_launch_rec *rec;

	if (!dev->in_launch)
		return opr_error_set(err, OPR_EINTERNAL, "launch ended without a launch begun");
	int rc = dev->nrecs == dev->caprecs ? recs_grow(dev, err) : 0;

	if (rc < 0)
		return rc;
	rec = &dev->recs[dev->nrecs++];
	/* every other field is set by ops_model_launch (no memset of the whole
	 * record: it was a tenth of a one-element call) */
	memcpy(rec->name, dev->launch_name, sizeof rec->name); /* both zero-padded */
	rec->double_buffer = dev->double_buffer;
	ops_model_launch(&dev->env, &dev->mc, dev->acc, dev->acc_mask, dev->double_buffer,
			 dev->one_pass, ops_kernel_class_of(dev->launch_name, dev->alt_kernel),
			 dev->nrecs == 1, rec);
	/* only the cores this launch touched are non-zero: every write to
	 * acc[c] sets acc[c].active and bit c of acc_mask */
	static const struct ops_core_acc zero;
	for (int w = 0; w < OPS_CORE_WORDS; w++) {
		for (uint64_t m = dev->acc_mask[w]; m; m &= m - 1)
			dev->acc[64 * w + __builtin_ctzll(m)] = zero;
		dev->acc_mask[w] = 0;
	}
	dev->in_launch = 0;
	dev->core = 0;
	dev->one_pass = 0;
	dev->alt_kernel = 0;
	dev->stream_global = 0;
	return 0;
}

/* ---- launch memos (device_int.h) ---------------------------------------- */

/* The memo adds and subtracts the counters as an array of sums */
_Static_assert(sizeof(struct ops_counters) ==
	       sizeof(uint64_t) * (OPS_NSPACES * OPS_NSPACES + 7 + OPS_NDTYPES + 2 + OPS_MAX_CORES),
	       "struct ops_counters is uint64_t fields only");

int ops_launch_memo_begin(struct ops_device *dev, struct ops_counters *before)
{
	if (dev->dry_run || dev->in_launch || dev->nlive)
		return 0;
	*before = dev->c;
	dev->c.peak_shared_bytes = 0;
	return 1;
}

void ops_launch_memo_end(struct ops_device *dev, const struct ops_counters *before, int ok,
			 struct ops_launch_memo *m)
{
	const uint64_t *a = (const uint64_t *)&dev->c, *b = (const uint64_t *)before;
	uint64_t *dl = (uint64_t *)&m->delta;

	m->valid = ok && dev->nrecs && !dev->nlive;
	if (m->valid) {
		/* every field a uint64_t sum but the peak (ops.h) */
		for (size_t i = 0; i < sizeof m->delta / sizeof *dl; i++)
			dl[i] = a[i] - b[i];
		m->delta.peak_shared_bytes = dev->c.peak_shared_bytes;
		m->rec = dev->recs[dev->nrecs - 1];
		m->first = dev->nrecs == 1;
		m->serial = dev->serial;
	}
	if (before->peak_shared_bytes > dev->c.peak_shared_bytes)
		dev->c.peak_shared_bytes = before->peak_shared_bytes;
}

int ops_launch_memo_fits(const struct ops_device *dev, const struct ops_launch_memo *m)
{
	return m->valid && m->serial == dev->serial && !dev->dry_run && !dev->in_launch &&
	       !dev->nlive && m->first == (dev->nrecs == 0);
}

int ops_launch_replay(struct ops_device *dev, const struct ops_launch_memo *m,
		      struct opr_error *err)
{
	uint64_t *c = (uint64_t *)&dev->c;
	const uint64_t *dl = (const uint64_t *)&m->delta;
	uint64_t peak = dev->c.peak_shared_bytes;
	int rc = dev->nrecs == dev->caprecs ? recs_grow(dev, err) : 0;

	if (rc < 0)
		return rc;
	dev->recs[dev->nrecs++] = m->rec;
	dev->replays++;
	for (size_t i = 0; i < sizeof dev->c / sizeof *c; i++)
		c[i] += dl[i];
	dev->c.peak_shared_bytes = peak > m->delta.peak_shared_bytes ? peak :
				   m->delta.peak_shared_bytes;
	return 0;
}

void ops_launch_alt_kernel(struct ops_device *dev)
{
	if (dev->in_launch)
		dev->alt_kernel = 1;
}

/* ---- one-tile launches (device_int.h) --------------------------------------- */

/* The host's work of a one-tile launch: x straight into y where the launch
 * allows it (ops_tile1.pass), else staged through the tile (never streamed:
 * far below the host's cache). */
static inline void tile1_compute(const struct ops_tile1 *k)
{
	_Alignas(32) unsigned char tile[OPS_TILE1_MAX_BYTES];

	if (k->one_pass && k->pass) {
		k->pass(k->ctx, k->x, k->y, k->n);
		return;
	}
	copy_row(k->elem_bytes, k->x, k->xs, tile, 1, k->n, 0);
	k->kernel(k->ctx, tile, k->n);
	copy_row(k->elem_bytes, tile, 1, k->y, k->ys, k->n, 0);
}

int ops_launch_tile1(struct ops_device *dev, const struct ops_tile1 *k)
{
	const uint64_t bytes = (uint64_t)k->n * k->elem_bytes;

	if (dev->tile1_off || !k->name || dev->in_launch || k->n < 1 || k->elem_bytes == 0 ||
	    bytes > OPS_TILE1_MAX_BYTES || k->n > dev->env.dma_max_last_dim ||
	    (unsigned)k->dtype >= OPS_NDTYPES || dev->nrecs == dev->caprecs ||
	    dev->footprint[0][OPS_SHARED] + bytes > space_capacity(dev, OPS_SHARED) ||
	    (!dev->dry_run && (!k->x || !k->y)))
		return 0;
	/* the buffer, held on core 0 from before the launch to after it */
	if (dev->footprint[0][OPS_SHARED] + bytes > dev->c.peak_shared_bytes)
		dev->c.peak_shared_bytes = dev->footprint[0][OPS_SHARED] + bytes;
	if (!dev->dry_run)
		tile1_compute(k);
	/* the launch, its tile on core 0, two transfers and the compute */
	dev->c.launches++;
	dev->c.tiles++;
	dev->c.bytes[OPS_GLOBAL][OPS_SHARED] += bytes;
	dev->c.bytes[OPS_SHARED][OPS_GLOBAL] += bytes;
	dev->c.transfers += 2;
	dev->c.elem_ops += k->elem_ops;
	dev->c.compute_read_bytes += bytes;
	dev->c.compute_write_bytes += bytes;
	dev->c.core_work[0] += k->elem_ops;
	struct ops_launch_rec *rec = &dev->recs[dev->nrecs++];
	const int first = dev->nrecs == 1;
	const enum ops_kernel_class fam = ops_kernel_class_of(k->name, 0);
	if (dev->tile1_last.valid && dev->tile1_last.dtype == k->dtype &&
	    dev->tile1_last.first == first && dev->tile1_last.fam == fam &&
	    dev->tile1_last.elem_ops == k->elem_ops && dev->tile1_last.bytes == bytes &&
	    dev->tile1_last.double_buffer == (k->double_buffer != 0) &&
	    dev->tile1_last.one_pass == (k->one_pass != 0)) {
		/* (all but the name, which is set below: one vector copy) */
		const size_t skip = offsetof(struct ops_launch_rec, cores_used);
		memcpy((char *)rec + skip, (const char *)&dev->tile1_last.rec + skip,
		       sizeof *rec - skip);
	} else {
		struct ops_core_acc a = { 0 };
		acc_add_transfer(&a, OPS_SHARED, OPS_GLOBAL, bytes);
		acc_add_compute(&dev->env, &a, k->dtype, 0, k->elem_ops, 2 * bytes);
		acc_add_transfer(&a, OPS_GLOBAL, OPS_SHARED, bytes);
		ops_model_launch_one(&dev->env, &dev->mc, &a, k->double_buffer, k->one_pass, fam,
				     first, rec);
		dev->tile1_last.valid = 1;
		dev->tile1_last.first = first;
		dev->tile1_last.fam = fam;
		dev->tile1_last.double_buffer = k->double_buffer != 0;
		dev->tile1_last.one_pass = k->one_pass != 0;
		dev->tile1_last.dtype = k->dtype;
		dev->tile1_last.elem_ops = k->elem_ops;
		dev->tile1_last.bytes = bytes;
		dev->tile1_last.rec = *rec;
	}
	memcpy(rec->name, k->name, sizeof rec->name); /* as copy_name leaves it */
	return 1;
}

void ops_note_fallback(struct ops_device *dev)
{
	dev->c.fallbacks++;
}
