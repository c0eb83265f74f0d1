/* collect/papi_cuda.c: GPU hardware counters through PAPI's cuda component
 * (CUPTI's profiler underneath), in a counting pass of their own: one event
 * set per event around one run of the work, since the profiler replays or
 * refuses metrics that need more than one pass together. The second file
 * that includes <papi.h> (papi.c holds the host's event sets): the cuda
 * component's event names, qualifiers and one-pass rule live here. */
#include "papi.h"

#include <papi.h>
#include <stdio.h>
#include <string.h>

/* The default GPU events, qualified as the cuda component names them:
 * DRAM bytes each way, SM<->L2 sectors (32 B) from the SMs' texture/load
 * path (lts__t_bytes also counts L2<->DRAM fills, so it is not SM traffic),
 * shared-memory wavefronts, the elapsed cycles of the slowest SM, and the
 * warp instructions executed. */
static const char *const gpu_default[] = {
	"cuda:::dram__bytes_read:stat=sum:device=0",
	"cuda:::dram__bytes_write:stat=sum:device=0",
	"cuda:::lts__t_sectors_srcunit_tex_op_read:stat=sum:device=0",
	"cuda:::lts__t_sectors_srcunit_tex_op_write:stat=sum:device=0",
	"cuda:::l1tex__data_pipe_lsu_wavefronts_mem_shared:stat=sum:device=0",
	"cuda:::sm__cycles_elapsed:stat=max:device=0",
	"cuda:::smsp__inst_executed:stat=sum:device=0",
	NULL,
};

const char *const *col_gpu_default_events(void)
{
	return gpu_default;
}

/* Why no cuda event can be counted in this process, or "" when the
 * component is there and enabled. */
static void component_reason(char *buf, size_t len)
{
	int rc;

	buf[0] = '\0';
	if (PAPI_is_initialized() == PAPI_NOT_INITED) {
		rc = PAPI_library_init(PAPI_VER_CURRENT);
		if (rc != PAPI_VER_CURRENT) {
			snprintf(buf, len, "PAPI failed to initialise: %s",
				 rc < 0 ? PAPI_strerror(rc) : "version mismatch");
			return;
		}
	}
	int cidx = PAPI_get_component_index("cuda");
	if (cidx < 0) {
		snprintf(buf, len, "this PAPI (%d.%d.%d) has no cuda component (built without it)",
			 PAPI_VERSION_MAJOR(PAPI_VER_CURRENT), PAPI_VERSION_MINOR(PAPI_VER_CURRENT),
			 PAPI_VERSION_REVISION(PAPI_VER_CURRENT));
		return;
	}
	/* the component initialises on first access to its events; until then
	 * it reads as disabled ("Not initialized") */
	int code = PAPI_NATIVE_MASK;
	(void)PAPI_enum_cmp_event(&code, PAPI_ENUM_FIRST, cidx);
	const PAPI_component_info_t *ci = PAPI_get_component_info(cidx);
	if (ci && ci->disabled)
		snprintf(buf, len, "PAPI's cuda component is disabled: %s", ci->disabled_reason);
}

int col_gpu_count(const char *const *names, size_t n, int (*prepare)(void *ctx, struct opr_error *err),
		  int (*run)(void *ctx, struct opr_error *err), void *ctx,
		  struct col_gpu_counter *out, struct opr_error *err)
{
	char why[COL_REASON_MAX];
	int rc;

	for (size_t i = 0; i < n; i++) {
		if (strlen(names[i]) >= sizeof out[i].name)
			return opr_error_set(err, OPR_EINPUT, "event name '%s' is too long", names[i]);
		memset(&out[i], 0, sizeof out[i]);
		snprintf(out[i].name, sizeof out[i].name, "%s", names[i]);
	}
	component_reason(why, sizeof why);
	if (why[0]) {
		for (size_t i = 0; i < n; i++)
			snprintf(out[i].reason, sizeof out[i].reason, "%s", why);
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		int es = PAPI_NULL;
		long long v = 0;
		if ((rc = PAPI_create_eventset(&es)) != PAPI_OK) {
			snprintf(out[i].reason, sizeof out[i].reason, "PAPI_create_eventset: %s",
				 PAPI_strerror(rc));
			continue;
		}
		rc = PAPI_add_named_event(es, names[i]);
		if (rc != PAPI_OK) {
			snprintf(out[i].reason, sizeof out[i].reason, "PAPI_add_named_event: %s",
				 PAPI_strerror(rc));
			PAPI_destroy_eventset(&es);
			continue;
		}
		if (prepare && (rc = prepare(ctx, err)) < 0)
			goto fail;
		rc = PAPI_start(es);
		if (rc != PAPI_OK) {
			snprintf(out[i].reason, sizeof out[i].reason, "PAPI_start: %s", PAPI_strerror(rc));
			PAPI_cleanup_eventset(es);
			PAPI_destroy_eventset(&es);
			continue;
		}
		int run_rc = run(ctx, err);
		rc = PAPI_stop(es, &v);
		PAPI_cleanup_eventset(es);
		PAPI_destroy_eventset(&es);
		if (run_rc < 0)
			return run_rc;
		if (rc != PAPI_OK) {
			snprintf(out[i].reason, sizeof out[i].reason, "PAPI_stop: %s", PAPI_strerror(rc));
			continue;
		}
		out[i].available = 1;
		out[i].value = v;
		continue;
fail:
		PAPI_cleanup_eventset(es);
		PAPI_destroy_eventset(&es);
		return rc;
	}
	return 0;
}
