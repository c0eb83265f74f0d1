/* ops/cuda_none.c: the CUDA backend's entry points in the plain build, which
 * links no CUDA: each says so (OPR_ENODEV), so a profile or archive that names
 * the GPU is refused plainly. `make cuda` links ops/cuda/ in its place. */
#include "cuda/cuda.h"

#define NO_BACKEND "this opreview is built without the CUDA backend (`make cuda` builds build-cuda/opreview with it)"

int ops_cuda_built(void)
{
	return 0;
}

int ops_cuda_new(int device, struct ops_cuda **out, struct opr_error *err)
{
	(void)device;
	*out = NULL;
	return opr_error_set(err, OPR_ENODEV, NO_BACKEND);
}

void ops_cuda_free(struct ops_cuda *cu)
{
	(void)cu;
}

/* Unreachable without a context (ops_cuda_new never gives one here). */
const struct ops_cuda_info *ops_cuda_info(const struct ops_cuda *cu)
{
	(void)cu;
	return NULL;
}

void ops_cuda_envelope(const struct ops_cuda *cu, struct ops_envelope *env)
{
	(void)cu;
	(void)env;
}

int ops_cuda_inst_new(struct ops_cuda *cu, struct ops_instance *inst, struct ops_cuda_inst **out,
		      struct opr_error *err)
{
	(void)cu;
	(void)inst;
	*out = NULL;
	return opr_error_set(err, OPR_ENODEV, NO_BACKEND);
}

void ops_cuda_inst_free(struct ops_cuda_inst *gi)
{
	(void)gi;
}

int ops_cuda_inst_launch(struct ops_cuda_inst *gi, struct opr_error *err)
{
	(void)gi;
	return opr_error_set(err, OPR_ENODEV, NO_BACKEND);
}

int ops_cuda_inst_run_checked(struct ops_cuda_inst *gi, struct opr_error *err)
{
	(void)gi;
	return opr_error_set(err, OPR_ENODEV, NO_BACKEND);
}

int ops_cuda_inst_launches(const struct ops_cuda_inst *gi)
{
	(void)gi;
	return 0;
}

int ops_cuda_flush_l2(struct ops_cuda *cu, struct opr_error *err)
{
	(void)cu;
	return opr_error_set(err, OPR_ENODEV, NO_BACKEND);
}

int ops_cuda_sync(struct ops_cuda *cu, struct opr_error *err)
{
	(void)cu;
	return opr_error_set(err, OPR_ENODEV, NO_BACKEND);
}

int ops_cuda_time(struct ops_cuda *cu, struct ops_cuda_inst *const *v, int nv, int samples,
		  int flush_l2, double *ns, struct opr_error *err)
{
	(void)cu;
	(void)v;
	(void)nv;
	(void)samples;
	(void)flush_l2;
	(void)ns;
	return opr_error_set(err, OPR_ENODEV, NO_BACKEND);
}

int ops_cuda_probe(struct ops_cuda *cu, enum ops_cuda_probe p, int quick, int samples,
		   double *value, struct opr_error *err)
{
	(void)cu;
	(void)p;
	(void)quick;
	(void)samples;
	(void)value;
	return opr_error_set(err, OPR_ENODEV, NO_BACKEND);
}

const char *ops_cuda_probe_method(enum ops_cuda_probe p)
{
	(void)p;
	return "";
}

int ops_cuda_inst_launch_times(struct ops_cuda_inst *gi, struct ops_cuda *cu, int samples,
			       double *ns, int max, int *nlaunch, struct opr_error *err)
{
	(void)gi;
	(void)cu;
	(void)samples;
	(void)ns;
	(void)max;
	*nlaunch = 0;
	return opr_error_set(err, OPR_ENODEV, NO_BACKEND);
}

int ops_cuda_replay(struct ops_cuda *cu, struct ops_instance *inst, int nstreams,
		    const struct ops_cuda_replay_job *jobs, size_t njobs, double *start_ns,
		    double *end_ns, struct opr_error *err)
{
	(void)cu;
	(void)inst;
	(void)nstreams;
	(void)jobs;
	(void)njobs;
	(void)start_ns;
	(void)end_ns;
	return opr_error_set(err, OPR_ENODEV, NO_BACKEND);
}
