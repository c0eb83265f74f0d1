/* ops/ops_int.h: internals shared by the files of ops/ only (never included
 * outside ops/ or tests/): the instance layout and the per-group operation
 * table that ops/workload.c and ops/plan.c dispatch through. */
#ifndef OPS_INT_H
#define OPS_INT_H

#include "ops.h"

#define OPS_MAX_TENSORS 6

/* A host tensor of an instance. Inputs are filled from the seeded generator
 * under the key (seed, block, name); outputs are poisoned (0xFF bytes: NaN
 * for floats, -1 for ints) before every run so an unwritten element fails.
 * An input's data stays as filled unless its writer then calls
 * ops_instance_input_changed, which bumps version: what an instance keeps
 * derived from an input across runs (the bf16 conv's packed weights) is
 * derived again when the version it came from is no longer the input's. */
struct ops_tensor {
	char name[16];          /* "x", "w", "bias", "a", "b", "scale", "y", ... */
	enum ops_dtype dtype;
	int64_t count;          /* elements */
	void *data;             /* count * ops_dtype_size(dtype) bytes, 64-byte aligned */
	int is_output;
	uint64_t version;       /* ops_instance_input_changed's count */
};

struct ops_instance {
	struct ops_workload work;
	struct ops_plan plan;
	uint64_t seed;
	char block[64];
	struct ops_tensor t[OPS_MAX_TENSORS];
	int nt;
	int out_index;          /* which tensor is the final output */
	void *priv;             /* operator-private state (scratch), freed by impl->release */
	int dry;                /* planning instance: every tensor's data is NULL */
};

/* One entry per group. Every function reports errors through err. */
struct ops_group_impl {
	enum ops_group group;
	/* Validates a workload's shape/dtype/quant for this group (OPR_EINPUT). */
	int (*check)(const struct ops_workload *w, struct opr_error *err);
	/* Host bytes of all tensors plus scratch, for the memory cap. */
	uint64_t (*bytes)(const struct ops_workload *w);
	/* Declares and allocates tensors (ops_instance_add_tensor) and fills
	 * inputs; may set priv. */
	int (*prepare)(struct ops_instance *inst, struct opr_error *err);
	/* Runs inst->plan on dev: launches, DMA and compute through the device
	 * API so that counters are exact; in a dry run counts only. */
	int (*run)(struct ops_device *dev, struct ops_instance *inst,
		   struct opr_error *err);
	/* Compares the output with the fp64 / exact-integer reference. */
	int (*quality)(const struct ops_instance *inst, struct ops_quality *q,
		       struct opr_error *err);
	/* Candidate plans for the planner (fused as given); returns the count
	 * written (<= max). */
	size_t (*plans)(const struct ops_envelope *env, const struct ops_workload *w,
			int fused, struct ops_plan *out, size_t max);
	/* Releases priv (may be NULL). */
	void (*release)(struct ops_instance *inst);
	const char *const *params;   /* plan parameter names, NULL-terminated */
};

extern const struct ops_group_impl ops_impl_activation;
extern const struct ops_group_impl ops_impl_conv;
extern const struct ops_group_impl ops_impl_conv_bias_act;
extern const struct ops_group_impl ops_impl_qgemm;
extern const struct ops_group_impl ops_impl_qgemm_dq_bias_act;
extern const struct ops_group_impl ops_impl_permute;
extern const struct ops_group_impl ops_impl_permute_act;

const struct ops_group_impl *ops_group_impl(enum ops_group g);

/* Adds a tensor to an instance (64-byte aligned, 0xFF-poisoned); fills it
 * from the generator when fill_lo < fill_hi (ints: inclusive range).
 * Returns its index or a negative error. */
int ops_instance_add_tensor(struct ops_instance *inst, const char *name,
			    enum ops_dtype t, int64_t count, int is_output,
			    double fill_lo, double fill_hi, struct opr_error *err);
struct ops_tensor *ops_instance_tensor(struct ops_instance *inst, const char *name);
/* Says that input name's data was rewritten (its version bumped): the next
 * run derives again what it kept from it. OPR_EINPUT for no such input. */
int ops_instance_input_changed(struct ops_instance *inst, const char *name,
			       struct opr_error *err);
/* A planning instance: the same tensors (names, dtypes, counts) with data ==
 * NULL and no host memory, for dry-run devices only (the planner). So
 * impl->prepare must not touch tensor data when inst->dry, and impl->run on a
 * dry-run device must only count. Caller frees with ops_instance_free. */
int ops_instance_new_dry(const struct ops_workload *w, const struct ops_plan *plan,
			 struct ops_instance **out, struct opr_error *err);

/* Element-wise activation over a contiguous fp32 run (vectorised); shared by
 * the activation op and the fused epilogues of conv2d, qgemm and permute. */
void ops_act_f32(enum ops_act a, const float *x, float *y, size_t n);

/* Relative L2 error ||y - ref|| / ||ref|| of n outputs of dtype t against an
 * fp64 reference (0 when both are zero). */
double ops_rel_l2(enum ops_dtype t, const void *y, const double *ref, int64_t n);

#endif
