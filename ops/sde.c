/* ops/sde.c: the device counters as PAPI software-defined events
 * sde:::opreview::<NAME>, read through callbacks from the device bound with
 * ops_sde_bind (so a reading is always the device's current value). The one
 * place that talks to libsde. */
#include "device_int.h"

#include <sde_lib.h>

enum sde_id {
	SDE_GLOBAL_READ, SDE_GLOBAL_WRITE, SDE_SHARED_READ, SDE_SHARED_WRITE,
	SDE_LOCAL_READ, SDE_LOCAL_WRITE, SDE_TRANSFERS, SDE_SPLITS, SDE_LAUNCHES,
	SDE_TILES, SDE_FALLBACKS, SDE_MACS_FP32, SDE_MACS_FP16, SDE_MACS_BF16,
	SDE_MACS_INT8, SDE_ELEM_OPS, SDE_PEAK_SHARED, SDE_N
};

/* Units: bytes, counts. SHARED reads and writes include compute's own
 * reads and writes; MACS_INT8 is s8 and u8 together. No descriptions are
 * registered: libsde 7.0 copies them and never frees the copies. */
static const char *const sde_names[SDE_N + 1] = {
	"GLOBAL_READ_BYTES",   /* DMA out of GLOBAL */
	"GLOBAL_WRITE_BYTES",  /* DMA into GLOBAL */
	"SHARED_READ_BYTES",   /* DMA out of SHARED + compute reads */
	"SHARED_WRITE_BYTES",  /* DMA into SHARED + compute writes */
	"LOCAL_READ_BYTES",    /* DMA out of LOCAL */
	"LOCAL_WRITE_BYTES",   /* DMA into LOCAL */
	"DMA_TRANSFERS",       /* descriptors issued, after splitting */
	"DMA_SPLITS",          /* extra transfers caused by max_last_dim */
	"LAUNCHES",
	"TILES",
	"FALLBACKS",           /* plans that did not fit and were replaced */
	"MACS_FP32", "MACS_FP16", "MACS_BF16", "MACS_INT8",
	"ELEM_OPS",            /* element-wise evaluations */
	"PEAK_SHARED_BYTES",   /* largest SHARED footprint on one core */
	NULL
};

static const struct ops_device *bound;
static int sde_ids[SDE_N];
static int registered;

static uint64_t from_space(const struct ops_counters *c, enum ops_space s)
{
	uint64_t v = 0;

	for (int d = 0; d < OPS_NSPACES; d++)
		v += c->bytes[s][d];
	return v;
}

static uint64_t into_space(const struct ops_counters *c, enum ops_space s)
{
	uint64_t v = 0;

	for (int src = 0; src < OPS_NSPACES; src++)
		v += c->bytes[src][s];
	return v;
}

static uint64_t counter_value(const struct ops_counters *c, enum sde_id id)
{
	switch (id) {
	case SDE_GLOBAL_READ: return from_space(c, OPS_GLOBAL);
	case SDE_GLOBAL_WRITE: return into_space(c, OPS_GLOBAL);
	case SDE_SHARED_READ: return from_space(c, OPS_SHARED) + c->compute_read_bytes;
	case SDE_SHARED_WRITE: return into_space(c, OPS_SHARED) + c->compute_write_bytes;
	case SDE_LOCAL_READ: return from_space(c, OPS_LOCAL);
	case SDE_LOCAL_WRITE: return into_space(c, OPS_LOCAL);
	case SDE_TRANSFERS: return c->transfers;
	case SDE_SPLITS: return c->splits;
	case SDE_LAUNCHES: return c->launches;
	case SDE_TILES: return c->tiles;
	case SDE_FALLBACKS: return c->fallbacks;
	case SDE_MACS_FP32: return c->macs[OPS_F32];
	case SDE_MACS_FP16: return c->macs[OPS_F16];
	case SDE_MACS_BF16: return c->macs[OPS_BF16];
	case SDE_MACS_INT8: return c->macs[OPS_S8] + c->macs[OPS_U8];
	case SDE_ELEM_OPS: return c->elem_ops;
	case SDE_PEAK_SHARED: return c->peak_shared_bytes;
	default: return 0;
	}
}

/* Called by PAPI on start and read. With no device bound every counter
 * reads 0. */
static long long sde_read(void *param)
{
	const int *id = param;

	if (!bound)
		return 0;
	return (long long)counter_value(&bound->c, (enum sde_id)*id);
}

/* Counters are DELTA (PAPI reports the change since PAPI_start); the peak
 * footprint is INSTANT (its current value). Registering twice is harmless. */
void ops_sde_register(void)
{
	papi_handle_t h;

	if (registered)
		return;
	h = papi_sde_init("opreview");
	if (!h)
		return;
	for (int i = 0; i < SDE_N; i++) {
		int mode = PAPI_SDE_RO | (i == SDE_PEAK_SHARED ? PAPI_SDE_INSTANT : PAPI_SDE_DELTA);
		sde_ids[i] = i;
		papi_sde_register_counter_cb(h, sde_names[i], mode, PAPI_SDE_long_long,
					     sde_read, &sde_ids[i]);
	}
	registered = 1;
}

/* The device must stay alive while bound; bind NULL before freeing it. */
void ops_sde_bind(const struct ops_device *dev)
{
	bound = dev;
}

const char *const *ops_sde_names(void)
{
	return sde_names;
}
