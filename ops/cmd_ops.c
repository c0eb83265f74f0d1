/* ops/cmd_ops.c: `opreview ops`: the operators, their dtypes, strategies and
 * plan parameters, straight from the group table. */
#include "ops_int.h"
#include "../opreview_cmds.h"

#include <stdio.h>

static const char *const group_dtypes[OPS_NGROUPS] = {
	"fp32 fp16 bf16", "fp32 fp16 bf16", "fp32 fp16 bf16",
	"u8|s8 x s8 -> fp32 (dequantised) or int8 (requantised)",
	"u8|s8 x s8 -> fp32 (dequantised)", "fp32 fp16 bf16 s8", "fp32 fp16 bf16"};

int cmd_ops(int argc, char **argv)
{
	static const struct opr_option opts[] = {{OPR_OPT_END, NULL, NULL, NULL, NULL}};
	static const struct opr_command_help help = {
		"ops", "ops",
		"List the operator groups, their dtypes, strategies and tile-plan parameters.",
		"A group marked 'not implemented yet' is known to the profile loader but has\n"
		"no kernel in this build.",
		opts};
	const char *pos[1];
	int npos, rc;
	if (opr_cmd_start(&help, argc, argv, pos, 0, &npos, NULL, 0, "", &rc))
		return rc;
	printf("%-30s %-6s %-56s %s\n", "group", "ops", "dtypes", "plan parameters");
	for (int g = 0; g < OPS_NGROUPS; g++) {
		const struct ops_group_impl *impl = ops_group_impl(g);
		char params[256] = "";
		size_t used = 0;
		const char *const *names = impl ? impl->params : NULL;
		for (int i = 0; names && names[i]; i++) {
			int w = snprintf(params + used, sizeof params - used, "%s%s", i ? " " : "", names[i]);
			if (w < 0 || (size_t)w >= sizeof params - used)
				break;
			used += (size_t)w;
		}
		printf("%-30s %-6d %-56s %s\n", ops_group_name(g), ops_group_nops(g), group_dtypes[g],
		       impl ? params : "(not implemented yet)");
	}
	printf("\nstrategies (conv2d): untiled, direct, im2col, winograd (F(4x4, 3x3): 3x3 filters,\n"
	       "  stride and dilation 1, fp32, not on a cuda device)\n"
	       "activations: relu gelu gelu-tanh silu sigmoid tanh\n"
	       "every plan also takes: fused (from the variant's fusion), split_k, double_buffer\n");
	return OPR_EXIT_OK;
}
