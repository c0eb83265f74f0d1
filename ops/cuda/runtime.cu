/* ops/cuda/runtime.cu: the CUDA backend's runtime: the device context and its
 * envelope, instances (device copies of an ops_instance's tensors and the
 * launches of its plan), checked runs that copy results back for the host's
 * references, and timing with CUDA events (L2 flushed between samples by
 * default) and CUDA graphs. Units: bytes, ns. */
#include "cuda_int.h"

#include <algorithm>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ops_cuda_check(cudaError_t rc, const char *what, struct opr_error *err)
{
	if (rc == cudaSuccess)
		return 0;
	return opr_error_set(err, OPR_EIO, "cuda: %s: %s (%s)", what, cudaGetErrorString(rc),
			     cudaGetErrorName(rc));
}

/* ---- the context ------------------------------------------------------------ */

int ops_cuda_new(int device, struct ops_cuda **out, struct opr_error *err)
{
	struct ops_cuda *cu;
	cudaDeviceProp p;
	int rc, v;

	*out = NULL;
	cu = (struct ops_cuda *)calloc(1, sizeof *cu);
	if (!cu)
		return opr_error_set(err, OPR_ENOMEM, "out of memory for the cuda context");
	if ((rc = ops_cuda_check(cudaSetDevice(device), "cudaSetDevice", err)) < 0 ||
	    (rc = ops_cuda_check(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties",
				 err)) < 0)
		goto fail;
	struct ops_cuda_info *in;
	in = &cu->info;
	snprintf(in->name, sizeof in->name, "%s", p.name);
	in->device = device;
	in->cc_major = p.major;
	in->cc_minor = p.minor;
	in->sm_count = p.multiProcessorCount;
	in->shared_per_block_optin = p.sharedMemPerBlockOptin;
	in->shared_per_sm = p.sharedMemPerMultiprocessor;
	in->l2_bytes = (size_t)p.l2CacheSize;
	in->global_bytes = p.totalGlobalMem;
	in->mem_bus_bits = p.memoryBusWidth;
	if (cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, device) == cudaSuccess)
		in->clock_khz = v;
	if (cudaDeviceGetAttribute(&v, cudaDevAttrMemoryClockRate, device) == cudaSuccess)
		in->mem_clock_khz = v;
	cudaDriverGetVersion(&in->driver_version);
	cudaRuntimeGetVersion(&in->runtime_version);
	if ((rc = ops_cuda_check(cudaStreamCreateWithFlags(&cu->stream, cudaStreamNonBlocking),
				 "cudaStreamCreate", err)) < 0 ||
	    (rc = ops_cuda_check(cudaEventCreate(&cu->ev0), "cudaEventCreate", err)) < 0 ||
	    (rc = ops_cuda_check(cudaEventCreate(&cu->ev1), "cudaEventCreate", err)) < 0)
		goto fail;
	cu->flush_bytes = 2 * (in->l2_bytes ? in->l2_bytes : ((size_t)64 << 20));
	if ((rc = ops_cuda_check(cudaMalloc(&cu->flush, cu->flush_bytes), "cudaMalloc (L2 flush)",
				 err)) < 0 ||
	    (rc = ops_cuda_check(cudaMemset(cu->flush, 1, cu->flush_bytes), "cudaMemset", err)) < 0)
		goto fail;
	*out = cu;
	return 0;
fail:
	ops_cuda_free(cu);
	return rc;
}

void ops_cuda_free(struct ops_cuda *cu)
{
	if (!cu)
		return;
	if (cu->flush)
		cudaFree(cu->flush);
	if (cu->ev0)
		cudaEventDestroy(cu->ev0);
	if (cu->ev1)
		cudaEventDestroy(cu->ev1);
	if (cu->stream)
		cudaStreamDestroy(cu->stream);
	free(cu);
}

const struct ops_cuda_info *ops_cuda_info(const struct ops_cuda *cu)
{
	return &cu->info;
}

/* The envelope of the device. From the device: cores (SMs), SHARED capacity
 * (opt-in per block), clock, HBM bandwidth (memory clock x 2 (DDR) x bus
 * width) and capacity. Per SM and clock, Hopper's documented throughputs:
 * shared memory 128 B, fp32 128 FMA, fp16/bf16 dense tensor cores 2048 MAC
 * (mma), int8 through dp4a (the qgemm kernel's path) 64 x 4 MAC, element-wise
 * 128 lanes. Leads: `calibrate` on the device replaces them with
 * measurements. A GPU load has no last-dimension limit, so max_last_dim is
 * left at 2^31-1 and loads have no setup cost of their own. */
void ops_cuda_envelope(const struct ops_cuda *cu, struct ops_envelope *env)
{
	const struct ops_cuda_info *in = &cu->info;
	const double ghz = in->clock_khz > 0 ? in->clock_khz / 1e6 : 1.98;
	const double sms = in->sm_count;

	memset(env, 0, sizeof *env);
	snprintf(env->name, sizeof env->name, "%s", in->name);
	snprintf(env->power_mode, sizeof env->power_mode, "nominal");
	env->clock_ghz = ghz;
	env->clock_scale = 1.0;
	env->cores = in->sm_count < OPS_MAX_CORES ? in->sm_count : OPS_MAX_CORES;
	env->global_bw_gbps = in->mem_clock_khz > 0 && in->mem_bus_bits > 0
				      ? in->mem_clock_khz * 1e3 * 2.0 * in->mem_bus_bits / 8.0 / 1e9
				      : 4800.0;
	env->global_capacity_gib = (double)in->global_bytes / (1024.0 * 1024 * 1024);
	env->shared_capacity_kib = (double)in->shared_per_block_optin / 1024.0;
	env->shared_bw_gbps = 128.0 * ghz;
	env->local_capacity_kib = 256.0;
	env->dma_max_last_dim = 2147483647;
	env->dma_setup_ns = 0.0;
	env->dma_engines = 1;
	env->dma_serial = 0;
	env->tops[OPS_F32] = 2.0 * 128 * sms * ghz / 1e3;
	env->tops[OPS_F16] = env->tops[OPS_BF16] = 2.0 * 2048 * sms * ghz / 1e3;
	env->tops[OPS_S8] = env->tops[OPS_U8] = 2.0 * 256 * sms * ghz / 1e3;
	env->tops[OPS_S32] = 2.0 * 64 * sms * ghz / 1e3;
	env->vector_tops = 128 * sms * ghz / 1e3;
	env->vector_half_tops = env->vector_tops;
	env->launch_overhead_us = 2.0;
}

/* Reads the flush buffer (2 x L2) so that every line of the operands is
 * evicted; a read leaves clean lines, so no write-back lands in the next
 * timed kernel. The store never happens (the sum of 1-bytes is not 0). */
__global__ void k_flush(const uint4 *__restrict__ p, size_t n, unsigned *sink)
{
	unsigned s = 0;
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		uint4 v = __ldcg(p + i);
		s += v.x ^ v.y ^ v.z ^ v.w;
	}
	if (s == 0x7fffffffu)
		*sink = s;
}

int ops_cuda_flush_l2(struct ops_cuda *cu, struct opr_error *err)
{
	k_flush<<<cu->info.sm_count * 4, 512, 0, cu->stream>>>((const uint4 *)cu->flush,
							       cu->flush_bytes / 16,
							       (unsigned *)cu->flush);
	CU_LAUNCHED("L2 flush kernel");
	return 0;
}

int ops_cuda_sync(struct ops_cuda *cu, struct opr_error *err)
{
	CU_TRY(cudaStreamSynchronize(cu->stream), "cudaStreamSynchronize");
	return 0;
}

/* ---- instances ----------------------------------------------------------------- */

struct ops_cuda_inst {
	struct ops_cuda *cu;
	struct ops_instance *inst;
	void *d[OPS_MAX_TENSORS];
	size_t bytes[OPS_MAX_TENSORS];
	/* qgemm */
	struct cu_qgemm q;
	/* conv2d's split-K scratch */
	struct cu_conv_ws cw;
	long long *acc_check;
	int launches;
	char shape[192];
};

static void *dev_of(struct ops_cuda_inst *gi, const char *name)
{
	for (int i = 0; i < gi->inst->nt; i++)
		if (!strcmp(gi->inst->t[i].name, name))
			return gi->d[i];
	return NULL;
}

static void permute_job(const struct ops_workload *w, const struct ops_plan *p,
			struct ops_permute_job *j)
{
	memset(j, 0, sizeof *j);
	j->rank = w->tensor.rank;
	for (int i = 0; i < OPS_MAX_RANK; i++) {
		j->dims[i] = i < w->tensor.rank ? w->tensor.dims[i] : 1;
		j->perm[i] = i < w->tensor.rank ? w->tensor.perm[i] : i;
	}
	j->dtype = w->dtype;
	j->with_act = w->group == OPS_G_PERMUTE_ACT;
	j->act = w->act;
	j->fused = p->fused;
	j->tile_rows = p->p[0];
	j->tile_cols = p->p[1];
	j->double_buffer = p->double_buffer;
}

void ops_cuda_inst_free(struct ops_cuda_inst *gi)
{
	if (!gi)
		return;
	for (int i = 0; i < OPS_MAX_TENSORS; i++)
		if (gi->d[i])
			cudaFree(gi->d[i]);
	if (gi->q.gacc)
		cudaFree(gi->q.gacc);
	if (gi->q.tickets)
		cudaFree(gi->q.tickets);
	if (gi->q.acc_out)
		cudaFree(gi->q.acc_out);
	if (gi->acc_check)
		cudaFree(gi->acc_check);
	if (gi->cw.ws)
		cudaFree(gi->cw.ws);
	if (gi->cw.tickets)
		cudaFree(gi->cw.tickets);
	if (gi->cw.wpk)
		cudaFree(gi->cw.wpk);
	free(gi);
}

int ops_cuda_inst_new(struct ops_cuda *cu, struct ops_instance *inst, struct ops_cuda_inst **out,
		      struct opr_error *err)
{
	struct ops_cuda_inst *gi;
	int rc = 0;

	*out = NULL;
	if (inst->dry)
		return opr_error_set(err, OPR_EINTERNAL, "a planning instance has no data for the GPU");
	gi = (struct ops_cuda_inst *)calloc(1, sizeof *gi);
	if (!gi)
		return opr_error_set(err, OPR_ENOMEM, "out of memory for a cuda instance");
	gi->cu = cu;
	gi->inst = inst;
	for (int i = 0; i < inst->nt; i++) {
		const struct ops_tensor *t = &inst->t[i];
		size_t b = (size_t)t->count * ops_dtype_size(t->dtype);
		gi->bytes[i] = b;
		if ((rc = ops_cuda_check(cudaMalloc(&gi->d[i], b ? b : 16), "cudaMalloc", err)) < 0)
			goto fail;
		if (t->is_output)
			rc = ops_cuda_check(cudaMemset(gi->d[i], 0xFF, b ? b : 16), "cudaMemset", err);
		else if (b)
			rc = ops_cuda_check(cudaMemcpy(gi->d[i], t->data, b, cudaMemcpyHostToDevice),
					    "cudaMemcpy to the device", err);
		if (rc < 0)
			goto fail;
	}
	if (inst->work.group == OPS_G_QGEMM || inst->work.group == OPS_G_QGEMM_DQ_BIAS_ACT) {
		const struct ops_workload *w = &inst->work;
		struct cu_qgemm *q = &gi->q;
		size_t mn = (size_t)(w->gemm.m * w->gemm.n);
		if ((rc = ops_qgemm_tiles_get(w, &inst->plan, cu->info.sm_count, &q->t, err)) < 0)
			goto fail;
		q->w = w;
		q->accb = ops_qgemm_acc_bytes(w);
		ops_qgemm_scales(w, &q->a_scale, &q->out_scale);
		q->a = dev_of(gi, "a");
		q->b = (const int8_t *)dev_of(gi, "b");
		q->scale = (const float *)dev_of(gi, "scale_b");
		q->bias = (const float *)dev_of(gi, "bias");
		q->y = dev_of(gi, "y");
		if ((rc = ops_cuda_check(cudaMalloc((void **)&q->gacc, mn * 8), "cudaMalloc", err)) < 0 ||
		    (rc = ops_cuda_check(cudaMemset(q->gacc, 0, mn * 8), "cudaMemset", err)) < 0 ||
		    (rc = ops_cuda_check(cudaMalloc((void **)&q->tickets, (size_t)q->t.ntn * 4),
					 "cudaMalloc", err)) < 0 ||
		    (rc = ops_cuda_check(cudaMemset(q->tickets, 0, (size_t)q->t.ntn * 4), "cudaMemset",
					 err)) < 0 ||
		    (rc = ops_cuda_check(cudaMalloc(&q->acc_out, mn * 8), "cudaMalloc", err)) < 0 ||
		    (rc = ops_cuda_check(cudaMalloc((void **)&gi->acc_check, mn * 8), "cudaMalloc",
					 err)) < 0)
			goto fail;
	}
	if (inst->work.group == OPS_G_CONV || inst->work.group == OPS_G_CONV_BIAS_ACT) {
		struct cu_conv_ws *c = &gi->cw;
		if ((rc = cu_conv_ws_size(&inst->work, &inst->plan, cu->info.sm_count, &c->floats,
					  &c->ntickets, err)) < 0)
			goto fail;
		if (c->floats &&
		    ((rc = ops_cuda_check(cudaMalloc((void **)&c->ws, c->floats * 4), "cudaMalloc",
					  err)) < 0 ||
		     (rc = ops_cuda_check(cudaMalloc((void **)&c->tickets, c->ntickets * 4),
					  "cudaMalloc", err)) < 0 ||
		     (rc = ops_cuda_check(cudaMemset(c->tickets, 0, c->ntickets * 4), "cudaMemset",
					  err)) < 0))
			goto fail;
		if ((rc = cu_conv_prepare(cu->stream, &inst->work, &inst->plan, cu->info.sm_count,
					  dev_of(gi, "w"), c, err)) < 0)
			goto fail;
	}
	*out = gi;
	return 0;
fail:
	ops_cuda_inst_free(gi);
	return rc;
}

static int inst_launch(struct ops_cuda_inst *gi, int check, struct opr_error *err)
{
	struct ops_instance *inst = gi->inst;
	const struct ops_workload *w = &inst->work;
	const struct ops_plan *p = &inst->plan;
	cudaStream_t s = gi->cu->stream;
	int launches = 0, rc = 0;

	switch (w->group) {
	case OPS_G_ACTIVATION: {
		int64_t n = inst->t[0].count;
		struct ops_envelope env;
		ops_cuda_envelope(gi->cu, &env);
		int64_t tile = p->p[0] > 0 ? p->p[0] : ops_activation_default_tile(&env, w->dtype);
		rc = cu_act_contig(s, w->act, w->dtype, dev_of(gi, "x"), dev_of(gi, "y"), n, tile,
				   p->double_buffer, gi->shape, sizeof gi->shape, err);
		launches = 1;
		break;
	}
	case OPS_G_CONV:
	case OPS_G_CONV_BIAS_ACT:
		rc = cu_conv_run(s, w, p, dev_of(gi, "x"), dev_of(gi, "w"),
				 (const float *)dev_of(gi, "bias"), dev_of(gi, "y"),
				 (int)gi->cu->info.shared_per_block_optin, gi->cu->info.sm_count, &gi->cw,
				 gi->shape,
				 sizeof gi->shape,
				 &launches, err);
		break;
	case OPS_G_QGEMM:
	case OPS_G_QGEMM_DQ_BIAS_ACT:
		gi->q.acc_check = check ? gi->acc_check : NULL;
		rc = cu_qgemm_run(s, &gi->q, p->fused, gi->shape, sizeof gi->shape, &launches, err);
		break;
	case OPS_G_PERMUTE:
	case OPS_G_PERMUTE_ACT: {
		struct ops_permute_job j;
		permute_job(w, p, &j);
		const int fuse = j.with_act && p->fused;
		rc = cu_permute(s, &j, dev_of(gi, "x"), dev_of(gi, "y"), fuse, gi->shape,
				sizeof gi->shape, &launches, err);
		if (rc == 0 && j.with_act && !fuse) {
			rc = cu_act_contig(s, w->act, w->dtype, dev_of(gi, "y"), dev_of(gi, "y"),
					   inst->t[inst->out_index].count, 0, 1, NULL, 0, err);
			launches++;
		}
		break;
	}
	default:
		return opr_error_set(err, OPR_ENOTIMPL, "group '%s' has no CUDA kernel",
				     ops_group_name(w->group));
	}
	gi->launches = launches;
	return rc;
}

int ops_cuda_inst_launch(struct ops_cuda_inst *gi, struct opr_error *err)
{
	return inst_launch(gi, 0, err);
}

int ops_cuda_inst_run_checked(struct ops_cuda_inst *gi, struct opr_error *err)
{
	struct ops_instance *inst = gi->inst;
	cudaStream_t s = gi->cu->stream;
	int rc;

	for (int i = 0; i < inst->nt; i++)
		if (inst->t[i].is_output) {
			memset(inst->t[i].data, 0xFF, gi->bytes[i]);
			CU_TRY(cudaMemsetAsync(gi->d[i], 0xFF, gi->bytes[i], s), "cudaMemset");
		}
	if ((rc = inst_launch(gi, 1, err)) < 0)
		return rc;
	CU_TRY(cudaStreamSynchronize(s), "the checked run");
	for (int i = 0; i < inst->nt; i++)
		if (inst->t[i].is_output && gi->bytes[i])
			CU_TRY(cudaMemcpy(inst->t[i].data, gi->d[i], gi->bytes[i], cudaMemcpyDeviceToHost),
			       "cudaMemcpy to the host");
	if (gi->acc_check) {
		size_t mn = (size_t)(inst->work.gemm.m * inst->work.gemm.n);
		int64_t *acc = (int64_t *)malloc(mn * sizeof *acc);
		if (!acc)
			return opr_error_set(err, OPR_ENOMEM, "out of memory for the accumulators");
		rc = ops_cuda_check(cudaMemcpy(acc, gi->acc_check, mn * 8, cudaMemcpyDeviceToHost),
				    "cudaMemcpy to the host", err);
		if (rc == 0)
			rc = ops_qgemm_set_acc(inst, acc, err);
		free(acc);
		if (rc < 0)
			return rc;
	}
	return 0;
}

int ops_cuda_inst_launches(const struct ops_cuda_inst *gi)
{
	return gi->launches;
}

const char *ops_cuda_inst_shape(const struct ops_cuda_inst *gi)
{
	return gi->shape;
}

/* ---- timing --------------------------------------------------------------------- */

int ops_cuda_time(struct ops_cuda *cu, struct ops_cuda_inst *const *v, int nv, int samples,
		  int flush_l2, double *ns, struct opr_error *err)
{
	int rc;

	for (int s = 0; s < samples; s++)
		for (int i = 0; i < nv; i++) {
			const int k = (s + i) % nv;
			float ms = 0.0f;
			if (flush_l2 && (rc = ops_cuda_flush_l2(cu, err)) < 0)
				return rc;
			CU_TRY(cudaEventRecord(cu->ev0, cu->stream), "cudaEventRecord");
			if ((rc = ops_cuda_inst_launch(v[k], err)) < 0)
				return rc;
			CU_TRY(cudaEventRecord(cu->ev1, cu->stream), "cudaEventRecord");
			CU_TRY(cudaEventSynchronize(cu->ev1), "cudaEventSynchronize");
			CU_TRY(cudaEventElapsedTime(&ms, cu->ev0, cu->ev1), "cudaEventElapsedTime");
			ns[k * samples + s] = ms * 1e6;
		}
	return 0;
}

int ops_cuda_time_graph(struct ops_cuda *cu, struct ops_cuda_inst *gi, int reps,
			double *ns_per_run, struct opr_error *err)
{
	cudaGraph_t g = NULL;
	cudaGraphExec_t ge = NULL;
	float ms = 0.0f;
	int rc = 0;

	CU_TRY(cudaStreamBeginCapture(cu->stream, cudaStreamCaptureModeThreadLocal), "capture");
	for (int r = 0; r < reps && rc == 0; r++)
		rc = ops_cuda_inst_launch(gi, err);
	cudaError_t ce = cudaStreamEndCapture(cu->stream, &g);
	if (rc < 0)
		goto out;
	if ((rc = ops_cuda_check(ce, "cudaStreamEndCapture", err)) < 0 ||
	    (rc = ops_cuda_check(cudaGraphInstantiate(&ge, g, 0), "cudaGraphInstantiate", err)) < 0 ||
	    (rc = ops_cuda_check(cudaGraphLaunch(ge, cu->stream), "cudaGraphLaunch", err)) < 0 ||
	    (rc = ops_cuda_check(cudaEventRecord(cu->ev0, cu->stream), "cudaEventRecord", err)) < 0 ||
	    (rc = ops_cuda_check(cudaGraphLaunch(ge, cu->stream), "cudaGraphLaunch", err)) < 0 ||
	    (rc = ops_cuda_check(cudaEventRecord(cu->ev1, cu->stream), "cudaEventRecord", err)) < 0 ||
	    (rc = ops_cuda_check(cudaEventSynchronize(cu->ev1), "cudaEventSynchronize", err)) < 0 ||
	    (rc = ops_cuda_check(cudaEventElapsedTime(&ms, cu->ev0, cu->ev1), "elapsed", err)) < 0)
		goto out;
	*ns_per_run = ms * 1e6 / reps;
out:
	if (ge)
		cudaGraphExecDestroy(ge);
	if (g)
		cudaGraphDestroy(g);
	return rc;
}

/* ---- strided activation of host views ------------------------------------------- */

/* The element span [lo, hi] a view touches (strides may be negative). */
static void span_of(int rank, const int64_t *dims, const int64_t *st, int64_t *lo, int64_t *hi)
{
	*lo = *hi = 0;
	for (int i = 0; i < rank; i++) {
		if (dims[i] == 0) {
			*lo = 0;
			*hi = -1;
			return;
		}
		int64_t e = (dims[i] - 1) * st[i];
		if (e < 0)
			*lo += e;
		else
			*hi += e;
	}
}

int ops_cuda_activation_strided(struct ops_cuda *cu, enum ops_act a, enum ops_dtype t, int rank,
				const int64_t *dims, const void *x, const int64_t *xstride, void *y,
				const int64_t *ystride, struct opr_error *err)
{
	const size_t es = ops_dtype_size(t);
	int64_t xlo, xhi, ylo, yhi;
	void *dx = NULL, *dy = NULL;
	struct cu_view v;
	int rc = 0;
	const int inplace = x == y;

	span_of(rank, dims, xstride, &xlo, &xhi);
	span_of(rank, dims, ystride, &ylo, &yhi);
	if (xhi < xlo || yhi < ylo)
		return 0; /* zero-size: nothing to do */
	size_t xb = (size_t)(xhi - xlo + 1) * es, yb = (size_t)(yhi - ylo + 1) * es;
	const char *xh = (const char *)x + xlo * (int64_t)es;
	char *yh = (char *)y + ylo * (int64_t)es;
	if ((rc = ops_cuda_check(cudaMalloc(&dx, xb), "cudaMalloc", err)) < 0 ||
	    (rc = ops_cuda_check(cudaMemcpy(dx, xh, xb, cudaMemcpyHostToDevice), "cudaMemcpy", err)) < 0)
		goto out;
	if (inplace) {
		dy = dx;
	} else if ((rc = ops_cuda_check(cudaMalloc(&dy, yb), "cudaMalloc", err)) < 0 ||
		   (rc = ops_cuda_check(cudaMemcpy(dy, yh, yb, cudaMemcpyHostToDevice), "cudaMemcpy",
					err)) < 0) {
		goto out;
	}
	cu_view_coalesce(rank, dims, xstride, ystride, &v);
	{
		const char *xd = (const char *)dx - xlo * (int64_t)es;
		char *yd = (char *)dy - ylo * (int64_t)es;
		if (v.rank == 1 && v.xs[0] == 1 && v.ys[0] == 1)
			rc = cu_act_contig(cu->stream, a, t, xd, yd, v.n, 0, 1, NULL, 0, err);
		else
			rc = cu_act_strided(cu->stream, a, t, xd, yd, &v, err);
	}
	if (rc < 0)
		goto out;
	if ((rc = ops_cuda_check(cudaStreamSynchronize(cu->stream), "activation", err)) < 0 ||
	    (rc = ops_cuda_check(cudaMemcpy(yh, dy, yb, cudaMemcpyDeviceToHost), "cudaMemcpy", err)) < 0)
		goto out;
out:
	if (dx)
		cudaFree(dx);
	if (dy && !inplace)
		cudaFree(dy);
	return rc;
}

/* ---- the copy reference --------------------------------------------------------- */

__global__ void __launch_bounds__(256) k_copy(const uint4 *__restrict__ s, uint4 *__restrict__ d,
					      size_t n)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		__stcs(d + i, __ldcs(s + i));
}

int ops_cuda_copy_bench(struct ops_cuda *cu, size_t bytes, int samples, double *median_ns,
			struct opr_error *err)
{
	void *s = NULL, *d = NULL;
	double *ns = NULL;
	int rc = 0;
	const size_t n = bytes / 16;

	ns = (double *)malloc(sizeof *ns * (size_t)samples);
	if (!ns)
		return opr_error_set(err, OPR_ENOMEM, "out of memory");
	if ((rc = ops_cuda_check(cudaMalloc(&s, bytes), "cudaMalloc", err)) < 0 ||
	    (rc = ops_cuda_check(cudaMalloc(&d, bytes), "cudaMalloc", err)) < 0 ||
	    (rc = ops_cuda_check(cudaMemset(s, 3, bytes), "cudaMemset", err)) < 0)
		goto out;
	for (int i = -2; i < samples; i++) {
		float ms;
		if ((rc = ops_cuda_check(cudaEventRecord(cu->ev0, cu->stream), "record", err)) < 0)
			goto out;
		k_copy<<<cu->info.sm_count * 8, 256, 0, cu->stream>>>((const uint4 *)s, (uint4 *)d, n);
		if ((rc = ops_cuda_check(cudaGetLastError(), "copy kernel", err)) < 0 ||
		    (rc = ops_cuda_check(cudaEventRecord(cu->ev1, cu->stream), "record", err)) < 0 ||
		    (rc = ops_cuda_check(cudaEventSynchronize(cu->ev1), "sync", err)) < 0 ||
		    (rc = ops_cuda_check(cudaEventElapsedTime(&ms, cu->ev0, cu->ev1), "elapsed", err)) < 0)
			goto out;
		if (i >= 0)
			ns[i] = ms * 1e6;
	}
	std::sort(ns, ns + samples);
	*median_ns = ns[samples / 2];
out:
	if (s)
		cudaFree(s);
	if (d)
		cudaFree(d);
	free(ns);
	return rc;
}
