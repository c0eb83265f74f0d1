/* ops/inspect.c: read-only access to an instance's tensors for digests and
 * archives, so code outside ops/ never sees the instance layout. */
#include "ops_int.h"

size_t ops_instance_ntensors(const struct ops_instance *inst)
{
	return (size_t)inst->nt;
}

const void *ops_instance_tensor_at(const struct ops_instance *inst, size_t i,
				   const char **name, size_t *bytes, int *is_output)
{
	const struct ops_tensor *t = &inst->t[i];
	*name = t->name;
	*bytes = (size_t)t->count * ops_dtype_size(t->dtype);
	*is_output = t->is_output;
	return t->data;
}
