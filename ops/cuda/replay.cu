/* ops/cuda/replay.cu: the scheduling pipeline on the real device. Two things
 * the simulation (collect/pipeline.c) needs from a GPU run:
 *   - the device time of each launch of one run of a plan, in order, the L2
 *     flushed before the run (what the simulation's service times become);
 *   - the simulation's arrival trace replayed: each traffic stream a CUDA
 *     stream with its own copy of the instance, each job (a batch the
 *     simulation closed) issued by the host at the simulation's close time
 *     on its stream as `runs` runs of the plan, its start and end read from
 *     CUDA events against one reference event recorded when the replay
 *     started. A job starts when its stream reaches it (after the stream's
 *     earlier jobs), and the GPU's block scheduler places its blocks on the
 *     SMs: CUDA gives no control over which SMs run a kernel.
 * A run of the plan is its launches captured once into a CUDA graph
 * (ops_cuda_inst_launch on the backend's stream, captured), so one graph
 * exec per stream replays it with no host-side setup per run. Units: ns. */
#include "cuda_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The plan's launches as a graph: captured on the backend's stream. */
static int capture(struct ops_cuda_inst *gi, struct ops_cuda *cu, cudaGraph_t *g,
		   struct opr_error *err)
{
	*g = NULL;
	CU_TRY(cudaStreamBeginCapture(cu->stream, cudaStreamCaptureModeThreadLocal), "capture");
	int rc = ops_cuda_inst_launch(gi, err);
	cudaError_t ce = cudaStreamEndCapture(cu->stream, g);
	if (rc < 0) {
		if (*g)
			cudaGraphDestroy(*g);
		*g = NULL;
		return rc;
	}
	return ops_cuda_check(ce, "capture of the plan's launches", err);
}

/* The graph's nodes in launch order: a captured single stream is a chain. */
static int chain(cudaGraph_t g, cudaGraphNode_t *nodes, size_t max, size_t *n,
		 struct opr_error *err)
{
	size_t nroot = 1;
	cudaGraphNode_t cur;
	*n = 0;
	CU_TRY(cudaGraphGetRootNodes(g, &cur, &nroot), "cudaGraphGetRootNodes");
	if (nroot != 1)
		return opr_error_set(err, OPR_EINTERNAL, "the captured plan is not one chain of launches");
	for (;;) {
		if (*n == max)
			return opr_error_set(err, OPR_ELIMIT, "more than %zu nodes in one run", max);
		nodes[(*n)++] = cur;
		size_t nd = 0;
		CU_TRY(cudaGraphNodeGetDependentNodes(cur, NULL, NULL, &nd), "cudaGraphNodeGetDependentNodes");
		if (nd == 0)
			return 0;
		if (nd != 1)
			return opr_error_set(err, OPR_EINTERNAL, "the captured plan branches");
		CU_TRY(cudaGraphNodeGetDependentNodes(cur, &cur, NULL, &nd), "cudaGraphNodeGetDependentNodes");
	}
}

#define MAX_NODES 64

int ops_cuda_inst_launch_times(struct ops_cuda_inst *gi, struct ops_cuda *cu, int samples,
			       double *ns, int max, int *nlaunch, struct opr_error *err)
{
	cudaGraph_t g = NULL;
	cudaGraphNode_t nodes[MAX_NODES];
	cudaEvent_t ev[MAX_NODES + 1] = {NULL};
	double *all = NULL;
	size_t nn = 0;
	int nk = 0, rc;

	*nlaunch = 0;
	if (samples < 1)
		return opr_error_set(err, OPR_EINTERNAL, "launch times: no samples");
	if ((rc = capture(gi, cu, &g, err)) < 0 || (rc = chain(g, nodes, MAX_NODES, &nn, err)) < 0)
		goto out;
	for (size_t i = 0; i < nn; i++) {
		cudaGraphNodeType t;
		if ((rc = ops_cuda_check(cudaGraphNodeGetType(nodes[i], &t), "cudaGraphNodeGetType", err)) < 0)
			goto out;
		if (t == cudaGraphNodeTypeKernel)
			nk++;
		else if (t != cudaGraphNodeTypeMemset) {
			rc = opr_error_set(err, OPR_EINTERNAL, "a run holds a graph node of type %d", (int)t);
			goto out;
		}
	}
	if (nk < 1 || nk > max) {
		rc = opr_error_set(err, OPR_ELIMIT, "%d kernel launches in one run (room for %d)", nk, max);
		goto out;
	}
	for (int i = 0; i <= nk; i++)
		if ((rc = ops_cuda_check(cudaEventCreate(&ev[i]), "cudaEventCreate", err)) < 0)
			goto out;
	if (!(all = (double *)malloc((size_t)samples * nk * sizeof *all))) {
		rc = opr_error_set(err, OPR_ENOMEM, "out of memory");
		goto out;
	}
	/* one untimed run, then the samples: each node launched on its own in
	 * order (a memset before a kernel counts into that kernel's time), an
	 * event after each kernel */
	for (int s = -1; s < samples && rc == 0; s++) {
		if ((rc = ops_cuda_flush_l2(cu, err)) < 0)
			break;
		if ((rc = ops_cuda_check(cudaEventRecord(ev[0], cu->stream), "cudaEventRecord", err)) < 0)
			break;
		int k = 0;
		for (size_t i = 0; i < nn && rc == 0; i++) {
			cudaGraphNodeType t;
			cudaGraphNodeGetType(nodes[i], &t);
			if (t == cudaGraphNodeTypeMemset) {
				cudaMemsetParams mp;
				if ((rc = ops_cuda_check(cudaGraphMemsetNodeGetParams(nodes[i], &mp),
							 "cudaGraphMemsetNodeGetParams", err)) < 0)
					break;
				if (mp.elementSize != 1) {
					rc = opr_error_set(err, OPR_EINTERNAL, "a memset of %u-byte elements in a run",
							   mp.elementSize);
					break;
				}
				rc = ops_cuda_check(cudaMemset2DAsync(mp.dst, mp.pitch ? mp.pitch : mp.width * mp.elementSize,
								      (int)mp.value, mp.width * mp.elementSize,
								      mp.height, cu->stream),
						    "cudaMemset2DAsync", err);
				continue;
			}
			cudaKernelNodeParams kp;
			if ((rc = ops_cuda_check(cudaGraphKernelNodeGetParams(nodes[i], &kp),
						 "cudaGraphKernelNodeGetParams", err)) < 0)
				break;
			if (!kp.kernelParams && kp.extra) {
				rc = opr_error_set(err, OPR_EINTERNAL, "a kernel node with packed arguments");
				break;
			}
			if ((rc = ops_cuda_check(cudaLaunchKernel(kp.func, kp.gridDim, kp.blockDim, kp.kernelParams,
								  kp.sharedMemBytes, cu->stream),
						 "cudaLaunchKernel", err)) < 0)
				break;
			k++;
			rc = ops_cuda_check(cudaEventRecord(ev[k], cu->stream), "cudaEventRecord", err);
		}
		if (rc < 0)
			break;
		if ((rc = ops_cuda_check(cudaEventSynchronize(ev[nk]), "cudaEventSynchronize", err)) < 0)
			break;
		for (int i = 0; i < nk && s >= 0; i++) {
			float ms = 0.0f;
			if ((rc = ops_cuda_check(cudaEventElapsedTime(&ms, ev[i], ev[i + 1]),
						 "cudaEventElapsedTime", err)) < 0)
				break;
			all[(size_t)i * samples + s] = ms * 1e6;
		}
	}
	if (rc == 0) {
		for (int i = 0; i < nk; i++) {
			double *x = all + (size_t)i * samples;
			/* insertion sort: a few dozen samples */
			for (int a = 1; a < samples; a++)
				for (int b = a; b > 0 && x[b - 1] > x[b]; b--) {
					double t = x[b];
					x[b] = x[b - 1];
					x[b - 1] = t;
				}
			ns[i] = samples % 2 ? x[samples / 2] : 0.5 * (x[samples / 2 - 1] + x[samples / 2]);
		}
		*nlaunch = nk;
	}
out:
	for (int i = 0; i <= MAX_NODES; i++)
		if (ev[i])
			cudaEventDestroy(ev[i]);
	if (g)
		cudaGraphDestroy(g);
	free(all);
	return rc;
}

int ops_cuda_replay(struct ops_cuda *cu, struct ops_instance *inst, int nstreams,
		    const struct ops_cuda_replay_job *jobs, size_t njobs, double *start_ns,
		    double *end_ns, struct opr_error *err)
{
	struct ops_cuda_inst **gi = NULL;
	cudaStream_t *st = NULL;
	cudaGraphExec_t *ge = NULL;
	cudaEvent_t *ev = NULL, ref = NULL;
	int rc = 0;

	if (!cu || !inst)
		return opr_error_set(err, OPR_EINTERNAL, "replay: no device or instance");
	if (nstreams < 1 || nstreams > 4096)
		return opr_error_set(err, OPR_EINPUT, "replay: %d streams (want 1..4096)", nstreams);
	gi = (struct ops_cuda_inst **)calloc((size_t)nstreams, sizeof *gi);
	st = (cudaStream_t *)calloc((size_t)nstreams, sizeof *st);
	ge = (cudaGraphExec_t *)calloc((size_t)nstreams, sizeof *ge);
	ev = (cudaEvent_t *)calloc(2 * (njobs ? njobs : 1), sizeof *ev);
	if (!gi || !st || !ge || !ev) {
		rc = opr_error_set(err, OPR_ENOMEM, "out of memory for the replay");
		goto out;
	}
	/* a copy of the instance per stream (its own device buffers, so that
	 * concurrent runs never share an output or qgemm's tickets) */
	for (int s = 0; s < nstreams && rc == 0; s++) {
		cudaGraph_t g = NULL;
		if ((rc = ops_cuda_inst_new(cu, inst, &gi[s], err)) < 0 ||
		    (rc = ops_cuda_check(cudaStreamCreateWithFlags(&st[s], cudaStreamNonBlocking),
					 "cudaStreamCreate", err)) < 0 ||
		    (rc = capture(gi[s], cu, &g, err)) < 0)
			break;
		rc = ops_cuda_check(cudaGraphInstantiate(&ge[s], g, 0), "cudaGraphInstantiate", err);
		cudaGraphDestroy(g);
		/* warm: module load and first touch stay out of the replay */
		if (rc == 0)
			rc = ops_cuda_check(cudaGraphLaunch(ge[s], st[s]), "cudaGraphLaunch", err);
	}
	for (size_t j = 0; j < 2 * njobs && rc == 0; j++)
		rc = ops_cuda_check(cudaEventCreate(&ev[j]), "cudaEventCreate", err);
	if (rc == 0)
		rc = ops_cuda_check(cudaEventCreate(&ref), "cudaEventCreate", err);
	if (rc == 0)
		rc = ops_cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize", err);
	if (rc < 0)
		goto out;
	if ((rc = ops_cuda_check(cudaEventRecord(ref, cu->stream), "cudaEventRecord", err)) < 0 ||
	    (rc = ops_cuda_check(cudaEventSynchronize(ref), "cudaEventSynchronize", err)) < 0)
		goto out;
	{
		const double t0 = now_ns();
		for (size_t j = 0; j < njobs && rc == 0; j++) {
			const struct ops_cuda_replay_job *jb = &jobs[j];
			const int s = jb->stream % nstreams;
			while (now_ns() - t0 < jb->issue_ns)
				; /* the host issues at the simulation's close time */
			rc = ops_cuda_check(cudaEventRecord(ev[2 * j], st[s]), "cudaEventRecord", err);
			for (int r = 0; r < jb->runs && rc == 0; r++)
				rc = ops_cuda_check(cudaGraphLaunch(ge[s], st[s]), "cudaGraphLaunch", err);
			if (rc == 0)
				rc = ops_cuda_check(cudaEventRecord(ev[2 * j + 1], st[s]), "cudaEventRecord", err);
		}
		if (rc == 0)
			rc = ops_cuda_check(cudaDeviceSynchronize(), "the replay", err);
		for (size_t j = 0; j < njobs && rc == 0; j++) {
			float a = 0.0f, b = 0.0f;
			if ((rc = ops_cuda_check(cudaEventElapsedTime(&a, ref, ev[2 * j]), "cudaEventElapsedTime",
						 err)) < 0 ||
			    (rc = ops_cuda_check(cudaEventElapsedTime(&b, ref, ev[2 * j + 1]),
						 "cudaEventElapsedTime", err)) < 0)
				break;
			start_ns[j] = (double)a * 1e6;
			end_ns[j] = (double)b * 1e6;
		}
	}
out:
	if (ev)
		for (size_t j = 0; j < 2 * njobs; j++)
			if (ev[j])
				cudaEventDestroy(ev[j]);
	if (ref)
		cudaEventDestroy(ref);
	for (int s = 0; ge && s < nstreams; s++)
		if (ge[s])
			cudaGraphExecDestroy(ge[s]);
	for (int s = 0; st && s < nstreams; s++)
		if (st[s])
			cudaStreamDestroy(st[s]);
	for (int s = 0; gi && s < nstreams; s++)
		ops_cuda_inst_free(gi[s]);
	free(gi);
	free(st);
	free(ge);
	free(ev);
	return rc;
}
