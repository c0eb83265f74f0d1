/* ops/cuda/probe.cu: the microbenchmarks `opreview calibrate --device cuda`
 * measures the GPU's envelope with: one kernel per envelope term, each
 * sample one timed launch between two CUDA events (bytes or operations over
 * the event time). Units: GB/s, TOPS (1e12 operations per second, a MAC
 * counting 2), us, ns. */
#include "cuda_int.h"

#include <stdlib.h>

#define PROBE_THREADS 256

/* Copies n float4 from src to dst, grid-stride, loads through L2 only
 * (__ldcg): HBM bandwidth when both buffers are far over the L2, the L2's
 * when they fit and are warm; `reps` passes over the same buffers. */
__global__ void k_probe_copy(const float4 *__restrict__ src, float4 *__restrict__ dst, size_t n,
			     int reps)
{
	const size_t stride = (size_t)gridDim.x * blockDim.x;
	for (int r = 0; r < reps; r++)
		for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
			__stcg(dst + i, __ldcg(src + i));
}

/* Each thread reads 16-byte vectors of a 16 KiB shared array (a warp reads
 * 512 contiguous bytes: four wavefronts, no bank conflict) `iters` times;
 * the asm volatile load keeps the compiler from hoisting it. */
__global__ void k_probe_shared(int iters, float *sink)
{
	__shared__ float4 s[1024];
	const int t = threadIdx.x;
	s[t] = make_float4((float)t, 1.0f, 2.0f, 3.0f);
	__syncthreads();
	float acc = 0.0f;
	for (int i = 0; i < iters; i++) {
		const unsigned a = (unsigned)__cvta_generic_to_shared(&s[(t + 32 * i) & 1023]);
		float x, y, z, w;
		asm volatile("ld.shared.v4.f32 {%0,%1,%2,%3}, [%4];"
			     : "=f"(x), "=f"(y), "=f"(z), "=f"(w)
			     : "r"(a));
		acc += x + y + z + w;
	}
	if (acc == -1.0f)
		*sink = acc;
}

/* 8 independent FMA chains per thread. */
__global__ void k_probe_fma(int iters, float seed, float *sink)
{
	float a[8];
	for (int k = 0; k < 8; k++)
		a[k] = seed + (float)(threadIdx.x + k);
	const float m = 0.999999f, c = 1e-7f;
	for (int i = 0; i < iters; i++)
#pragma unroll
		for (int k = 0; k < 8; k++)
			a[k] = fmaf(a[k], m, c);
	float s = 0.0f;
	for (int k = 0; k < 8; k++)
		s += a[k];
	if (s == -1.0f)
		*sink = s;
}

/* 8 independent dp4a chains per thread (the qgemm kernel's int8 path). */
__global__ void k_probe_dp4a(int iters, int seed, int *sink)
{
	int a[8];
	const int b = 0x01020304 ^ seed, c = 0x7f7f0101 ^ seed;
	for (int k = 0; k < 8; k++)
		a[k] = seed + (int)threadIdx.x + k;
	for (int i = 0; i < iters; i++)
#pragma unroll
		for (int k = 0; k < 8; k++)
			a[k] = __dp4a(b ^ a[k], c, a[k]);
	int s = 0;
	for (int k = 0; k < 8; k++)
		s += a[k];
	if (s == 0x12345678)
		*sink = s;
}

/* 4 independent tensor-core accumulators per warp, mma.sync m16n8k16 (the
 * conv kernel's instruction): kind 0 fp16, 1 bf16, both fp32 accumulators;
 * kind 2 int8 m16n8k32 s8 with int32 accumulators. */
template <int KIND> __global__ void k_probe_mma(int iters, unsigned seed, float *sink)
{
	unsigned a0 = seed ^ threadIdx.x, a1 = a0 * 3u, a2 = a0 * 5u, a3 = a0 * 7u;
	unsigned b0 = a0 * 11u, b1 = a0 * 13u;
	float d[4][4] = {};
	int di[4][4] = {};
	for (int i = 0; i < iters; i++) {
#pragma unroll
		for (int k = 0; k < 4; k++) {
			if (KIND == 0)
				asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
					     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
					     : "+f"(d[k][0]), "+f"(d[k][1]), "+f"(d[k][2]), "+f"(d[k][3])
					     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
			else if (KIND == 1)
				asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
					     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
					     : "+f"(d[k][0]), "+f"(d[k][1]), "+f"(d[k][2]), "+f"(d[k][3])
					     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
			else
				asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
					     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
					     : "+r"(di[k][0]), "+r"(di[k][1]), "+r"(di[k][2]), "+r"(di[k][3])
					     : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
		}
	}
	float s = 0.0f;
	for (int k = 0; k < 4; k++)
		for (int j = 0; j < 4; j++)
			s += d[k][j] + (float)di[k][j];
	if (s == -1.0f)
		*sink = s;
}

/* Element-wise: `iters` SiLUs (the activation kernels' cu_act) per element
 * of 8 register-resident elements per thread; half: bf16 in and out, the
 * conversions included, as the kernels do on bf16 data. */
template <int HALF> __global__ void k_probe_vector(int iters, float seed, float *sink)
{
	float v[8];
	for (int k = 0; k < 8; k++)
		v[k] = seed + 0.001f * (float)(threadIdx.x + k);
	for (int i = 0; i < iters; i++)
#pragma unroll
		for (int k = 0; k < 8; k++) {
			float x = cu_act(OPS_ACT_SILU, v[k]);
			v[k] = HALF ? __bfloat162float(__float2bfloat16_rn(x)) + 0.5f : x + 0.5f;
		}
	float s = 0.0f;
	for (int k = 0; k < 8; k++)
		s += v[k];
	if (s == -1.0f)
		*sink = s;
}

__global__ void k_probe_empty(void) {}

/* One thread walks a dependent chain of loads over a buffer far over the
 * L2 (each address is the previous load's value plus a stride of 2 MiB + a
 * line): the latency of one HBM load, the setup a transfer pays before its
 * first byte. */
__global__ void k_probe_chase(const unsigned *__restrict__ p, size_t n_words, int steps,
			      unsigned long long *out_ns, unsigned *sink)
{
	size_t i = 0;
	unsigned long long t0, t1;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	unsigned v = 0;
	for (int s = 0; s < steps; s++) {
		v = __ldcg(p + i);
		i = (i + v + ((size_t)2 << 20) / 4 + 32) % n_words;
	}
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
	*out_ns = t1 - t0;
	if (v == 0x12345678u)
		*sink = v;
}

static const char *const methods[OPS_CUDA_NPROBES] = {
	"float4 copy kernel (grid-stride, 4 blocks an SM, L2 flushed) of 1 GiB each way, "
	"read + written bytes over the CUDA-event time",
	"the same copy over 8 MiB each way (in the L2, warm), 32 passes: the L2's bandwidth, "
	"read + written bytes",
	"16-byte ld.shared of a 16 KiB array by 1024-thread blocks (2 an SM), no bank "
	"conflict, bytes read per SM",
	"8 independent FFMA chains per thread, 2 flops each, 4 x 256-thread blocks an SM",
	"mma.sync m16n8k16 f16 -> f32 (the conv kernel's instruction), 4 independent "
	"accumulators per warp, 16 warps an SM",
	"mma.sync m16n8k16 bf16 -> f32, 4 independent accumulators per warp, 16 warps an SM",
	"8 independent dp4a chains per thread (the qgemm kernel's path), 8 ops each",
	"mma.sync m16n8k32 s8 -> s32 tensor cores, 4 accumulators per warp: not the qgemm "
	"kernel's path, not used by the model",
	"SiLU (cu_act, SFU exp and divide) on 8 register-resident fp32 elements per thread, "
	"one op an element",
	"the same on bf16 values (fp32 math, a bf16 rounding each step)",
	"1000 back-to-back empty kernel launches between two events, per launch",
	"one thread's chain of 4096 dependent 4-byte __ldcg loads 2 MiB apart over 1 GiB "
	"(%globaltimer), per load",
	"one empty kernel between two events after an L2 flush, as the review times a sample "
	"(the first launch of a run)",
	"(9 - 1 empty kernels) between two events after an L2 flush, over 8: each further "
	"launch of a run",
};

const char *ops_cuda_probe_method(enum ops_cuda_probe p)
{
	return p >= 0 && p < OPS_CUDA_NPROBES ? methods[p] : "";
}

/* Times launch() between the context's events, in ns. */
template <typename F> static int timed(struct ops_cuda *cu, F launch, double *ns, struct opr_error *err)
{
	float ms = 0.0f;
	CU_TRY(cudaEventRecord(cu->ev0, cu->stream), "cudaEventRecord");
	launch();
	CU_LAUNCHED("probe kernel");
	CU_TRY(cudaEventRecord(cu->ev1, cu->stream), "cudaEventRecord");
	CU_TRY(cudaEventSynchronize(cu->ev1), "cudaEventSynchronize");
	CU_TRY(cudaEventElapsedTime(&ms, cu->ev0, cu->ev1), "cudaEventElapsedTime");
	*ns = ms * 1e6;
	return 0;
}

int ops_cuda_probe(struct ops_cuda *cu, enum ops_cuda_probe p, int quick, int samples,
		   double *value, struct opr_error *err)
{
	const int sms = cu->info.sm_count;
	cudaStream_t st = cu->stream;
	void *a = NULL, *b = NULL;
	float *sink = NULL;
	unsigned long long *chase_ns = NULL;
	int rc = 0;

	if (p < 0 || p >= OPS_CUDA_NPROBES || samples < 1)
		return opr_error_set(err, OPR_EINTERNAL, "ops_cuda_probe: bad probe %d", (int)p);
	if ((rc = ops_cuda_check(cudaMalloc(&sink, 64), "cudaMalloc", err)) < 0)
		return rc;
	size_t bytes = p == OPS_CUDA_P_COPY ? (quick ? (size_t)256 << 20 : (size_t)1 << 30)
		     : p == OPS_CUDA_P_L2 ? (size_t)8 << 20
		     : p == OPS_CUDA_P_LATENCY ? (size_t)1 << 30 : 0;
	if (bytes) {
		if ((rc = ops_cuda_check(cudaMalloc(&a, bytes), "cudaMalloc (probe)", err)) < 0 ||
		    (rc = ops_cuda_check(cudaMalloc(&b, bytes), "cudaMalloc (probe)", err)) < 0 ||
		    (rc = ops_cuda_check(cudaMemset(a, 0, bytes), "cudaMemset", err)) < 0 ||
		    (rc = ops_cuda_check(cudaMemset(b, 0, bytes), "cudaMemset", err)) < 0 ||
		    (rc = ops_cuda_check(cudaMalloc(&chase_ns, 8), "cudaMalloc", err)) < 0)
			goto out;
	}
	/* one untimed warm-up launch of each, then the samples */
	for (int s = -1; s < samples && rc == 0; s++) {
		double ns = 0, v = 0;
		const int it = quick ? 4096 : 16384;
		switch (p) {
		case OPS_CUDA_P_COPY: {
			size_t n = bytes / 16;
			if ((rc = ops_cuda_flush_l2(cu, err)) < 0)
				break;
			rc = timed(cu, [&] { k_probe_copy<<<sms * 4, 512, 0, st>>>((const float4 *)a, (float4 *)b, n, 1); }, &ns, err);
			v = 2.0 * (double)bytes / ns;
			break;
		}
		case OPS_CUDA_P_L2: {
			size_t n = bytes / 16;
			rc = timed(cu, [&] { k_probe_copy<<<sms * 4, 512, 0, st>>>((const float4 *)a, (float4 *)b, n, 32); }, &ns, err);
			v = 2.0 * 32 * (double)bytes / ns;
			break;
		}
		case OPS_CUDA_P_SHARED:
			rc = timed(cu, [&] { k_probe_shared<<<sms * 2, 1024, 0, st>>>(it * 4, sink); }, &ns, err);
			v = 2.0 * 1024 * 16.0 * it * 4 / ns; /* per SM: 2 blocks of 1024 threads */
			break;
		case OPS_CUDA_P_FP32:
			rc = timed(cu, [&] { k_probe_fma<<<sms * 4, PROBE_THREADS, 0, st>>>(it, 1.0f, sink); }, &ns, err);
			v = 2.0 * 8 * it * (double)sms * 4 * PROBE_THREADS / ns / 1e3;
			break;
		case OPS_CUDA_P_FP16:
		case OPS_CUDA_P_BF16:
		case OPS_CUDA_P_INT8_MMA: {
			const int warps = 16, iters = it / 4;
			if (p == OPS_CUDA_P_FP16)
				rc = timed(cu, [&] { k_probe_mma<0><<<sms * 4, 32 * warps / 4, 0, st>>>(iters, 7u, sink); }, &ns, err);
			else if (p == OPS_CUDA_P_BF16)
				rc = timed(cu, [&] { k_probe_mma<1><<<sms * 4, 32 * warps / 4, 0, st>>>(iters, 7u, sink); }, &ns, err);
			else
				rc = timed(cu, [&] { k_probe_mma<2><<<sms * 4, 32 * warps / 4, 0, st>>>(iters, 7u, sink); }, &ns, err);
			const double per = p == OPS_CUDA_P_INT8_MMA ? 2.0 * 16 * 8 * 32 : 2.0 * 16 * 8 * 16;
			v = per * 4 * iters * (double)sms * warps / ns / 1e3;
			break;
		}
		case OPS_CUDA_P_INT8:
			rc = timed(cu, [&] { k_probe_dp4a<<<sms * 4, PROBE_THREADS, 0, st>>>(it, 3, (int *)sink); }, &ns, err);
			v = 8.0 * 8 * it * (double)sms * 4 * PROBE_THREADS / ns / 1e3;
			break;
		case OPS_CUDA_P_VECTOR:
		case OPS_CUDA_P_VECTOR_HALF: {
			const int iters = it / 8;
			if (p == OPS_CUDA_P_VECTOR)
				rc = timed(cu, [&] { k_probe_vector<0><<<sms * 4, PROBE_THREADS, 0, st>>>(iters, -2.0f, sink); }, &ns, err);
			else
				rc = timed(cu, [&] { k_probe_vector<1><<<sms * 4, PROBE_THREADS, 0, st>>>(iters, -2.0f, sink); }, &ns, err);
			v = 8.0 * iters * (double)sms * 4 * PROBE_THREADS / ns / 1e3;
			break;
		}
		case OPS_CUDA_P_LAUNCH:
			rc = timed(cu, [&] { for (int k = 0; k < 1000; k++) k_probe_empty<<<1, 32, 0, st>>>(); }, &ns, err);
			v = ns / 1000.0 / 1000.0; /* us */
			break;
		case OPS_CUDA_P_LAUNCH_FIRST:
		case OPS_CUDA_P_LAUNCH_NEXT: {
			double one = 0;
			if ((rc = ops_cuda_flush_l2(cu, err)) < 0 ||
			    (rc = timed(cu, [&] { k_probe_empty<<<1, 32, 0, st>>>(); }, &one, err)) < 0)
				break;
			v = one / 1000.0;
			if (p == OPS_CUDA_P_LAUNCH_FIRST)
				break;
			if ((rc = ops_cuda_flush_l2(cu, err)) < 0 ||
			    (rc = timed(cu, [&] { for (int k = 0; k < 9; k++) k_probe_empty<<<1, 32, 0, st>>>(); }, &ns, err)) < 0)
				break;
			v = (ns - one) / 8.0 / 1000.0;
			if (v <= 0) /* noise on a tiny difference: the back-to-back bound */
				v = one / 9.0 / 1000.0;
			break;
		}
		case OPS_CUDA_P_LATENCY: {
			unsigned long long t = 0;
			const int steps = 4096;
			if ((rc = ops_cuda_flush_l2(cu, err)) < 0)
				break;
			rc = timed(cu, [&] { k_probe_chase<<<1, 1, 0, st>>>((const unsigned *)a, bytes / 4, steps, chase_ns, (unsigned *)sink); }, &ns, err);
			if (rc == 0)
				rc = ops_cuda_check(cudaMemcpy(&t, chase_ns, 8, cudaMemcpyDeviceToHost), "cudaMemcpy", err);
			v = (double)t / steps;
			break;
		}
		default:
			break;
		}
		if (rc == 0 && s >= 0)
			value[s] = v;
	}
out:
	cudaFree(a);
	cudaFree(b);
	cudaFree(sink);
	cudaFree(chase_ns);
	return rc;
}

int ops_cuda_built(void)
{
	return 1;
}
