/* collect/calibrate.h: `opreview calibrate`: measures this host as an
 * envelope (bandwidths, compute rates, DMA setup, launch cost), each value
 * with its median, spread and sample count, and writes it as an envelope file
 * with a calibration: mapping (fixtures/profiles/README.md, "Calibration"). */
#ifndef COL_CALIBRATE_H
#define COL_CALIBRATE_H

#include "collect.h"

struct col_cal_options {
	int quick;                 /* fewer samples and smaller arrays (tests) */
	const char *name;          /* envelope name; NULL: "host" */
};

/* Measures the host. env is a complete envelope (cores 1: the host executor
 * runs every tile on one thread); cal holds the metadata and one entry per
 * measured value. Takes about 5-10 s, 1-2 s when quick. */
int col_calibrate(const struct col_cal_options *o, struct ops_envelope *env,
		  struct col_calibration *cal, struct opr_error *err);

/* The envelope file text (YAML, commented: which loop measured each value).
 * *out is malloc'd; the caller frees it. */
int col_calibration_yaml(const struct ops_envelope *env, const struct col_calibration *cal,
			 char **out, struct opr_error *err);

/* Writes text to path atomically (a temporary file beside it, fsync, then a
 * link or rename). An existing path is refused with OPR_EEXIST unless force. */
int col_write_atomic(const char *path, const char *text, int force, struct opr_error *err);

/* Measures GPU `index` through the CUDA backend (calibrate --device cuda):
 * env from the device (cores = SMs, SHARED capacity) and the probes of
 * ops/cuda/probe.cu; OPR_ENODEV in a build without the backend. */
int col_calibrate_gpu(const struct col_cal_options *o, int index, struct ops_envelope *env,
		      struct col_calibration *cal, struct opr_error *err);
/* Appends key's median, spread (IQR / median) and count of x[0..n) (sorted
 * in place) to cal. */
void col_cal_record(struct col_calibration *cal, const char *key, double *x, int n,
		    const char *method);

/* The calibration entry named key, or NULL. */
const struct col_cal_value *col_cal_find(const struct col_calibration *cal, const char *key);


#endif
