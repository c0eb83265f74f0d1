/* ops/isa.c: which host kernel path runs: the host's CPUID features (with
 * the OS's saved register state, as __builtin_cpu_supports checks them), the
 * OPREVIEW_ISA override, and the table every kernel call goes through. */
#include "isa_int.h"

#include <cpuid.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const struct ops_kern *ops_kern = &ops_kern_scalar;

static const char *const ISA_NAMES[OPS_NISAS] = { "scalar", "avx2", "avx512" };
static const char *const KFAM_NAMES[OPS_NKFAMS] = {
	"conv2d", "gemm_f32", "qgemm", "activation", "permute", "convert"
};

static const struct ops_kern *const TABLES[OPS_NISAS] = {
	&ops_kern_scalar, &ops_kern_avx2, &ops_kern_avx512
};

const char *ops_isa_name(enum ops_isa i)
{
	return (unsigned)i < OPS_NISAS ? ISA_NAMES[i] : "?";
}

int ops_isa_parse(const char *s, enum ops_isa *out)
{
	for (int i = 0; i < OPS_NISAS; i++)
		if (s && strcmp(s, ISA_NAMES[i]) == 0) {
			*out = (enum ops_isa)i;
			return 0;
		}
	return OPR_EINPUT;
}

/* F16C from CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports does
 * not know "f16c"; the OS saves the ymm state it needs when "avx2" holds. */
static int has_f16c(void)
{
	unsigned a, b, c, d;

	return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}

static int host_has_vnni(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512vnni");
}

/* The AVX-512 path needs F, BW, VL and DQ for its fp32 and byte kernels;
 * VNNI (every AVX-512 server core since Cascade Lake) for its int8 GEMM
 * only, which on a core without it (Skylake-SP and -X) is the AVX2 path's
 * (ops_kern_avx512_without_vnni); BF16, FP16 and AMX are used, where
 * present, inside functions of their own. */
int ops_isa_host_has(enum ops_isa i)
{
	__builtin_cpu_init();
	switch (i) {
	case OPS_ISA_SCALAR:
		return 1;
	case OPS_ISA_AVX2:
		return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
		       has_f16c();
	case OPS_ISA_AVX512:
		return ops_isa_host_has(OPS_ISA_AVX2) &&
		       __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
		       __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
	case OPS_NISAS:
		break;
	}
	return 0;
}

/* AVX-VNNI (CPUID leaf 7, subleaf 1, EAX bit 4): vpdpbusd on ymm without
 * AVX-512. Read from CPUID rather than __builtin_cpu_supports, which clang
 * 14 does not know it by; the OS saves the ymm state it needs when "avx2"
 * holds. */
static int host_has_avx_vnni(void)
{
	unsigned a, b, c, d;

	return __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 4));
}

/* The AVX2 table of a CPU with AVX-VNNI, built once
 * (ops_kern_avx2_with_vnni). */
static struct ops_kern avx2_vnni;
static pthread_once_t avx2_vnni_once = PTHREAD_ONCE_INIT;

static void avx2_vnni_build(void)
{
	avx2_vnni = ops_kern_avx2;
	ops_avx2_vnni_fill(&avx2_vnni);
}

const struct ops_kern *ops_kern_avx2_with_vnni(void)
{
	pthread_once(&avx2_vnni_once, avx2_vnni_build);
	return &avx2_vnni;
}

int ops_isa_host_has_avx_vnni(void)
{
	return ops_isa_host_has(OPS_ISA_AVX2) && host_has_avx_vnni();
}

/* The AVX-512 table of a CPU without VNNI, built once from the two
 * tables it draws on (ops_kern_avx512_without_vnni). */
static struct ops_kern avx512_no_vnni;
static pthread_once_t avx512_no_vnni_once = PTHREAD_ONCE_INIT;

static void avx512_no_vnni_build(void)
{
	avx512_no_vnni = ops_kern_avx512;
	avx512_no_vnni.qgemm = ops_kern_avx2.qgemm;
	avx512_no_vnni.qgemm_colsum = ops_kern_avx2.qgemm_colsum;
	avx512_no_vnni.qgemm_pack_chunk = NULL;
	avx512_no_vnni.qgemm_packed = NULL;
	avx512_no_vnni.path[OPS_KF_QGEMM] = "avx2 (vpmaddwd int16 pairs: this cpu's avx-512 has no vnni)";
}

const struct ops_kern *ops_kern_avx512_without_vnni(void)
{
	pthread_once(&avx512_no_vnni_once, avx512_no_vnni_build);
	return &avx512_no_vnni;
}

/* The table path i runs on this host. */
static const struct ops_kern *table_of(enum ops_isa i)
{
	if (i == OPS_ISA_AVX512 && !host_has_vnni())
		return ops_kern_avx512_without_vnni();
	if (i == OPS_ISA_AVX2 && ops_isa_host_has_avx_vnni())
		return ops_kern_avx2_with_vnni();
	return TABLES[i];
}

enum ops_isa ops_kfam_isa(enum ops_kfam f)
{
	return f == OPS_KF_QGEMM && ops_kern == &avx512_no_vnni ? OPS_ISA_AVX2 : ops_kern->isa;
}

int ops_qgemm_avx_vnni(void)
{
	return ops_kern == &avx2_vnni;
}

enum ops_isa ops_isa_host_best(void)
{
	int i = OPS_NISAS - 1;

	while (i > 0 && !ops_isa_host_has((enum ops_isa)i))
		i--;
	return (enum ops_isa)i;
}

enum ops_isa ops_isa_active(void)
{
	return ops_kern->isa;
}

static void host_list(char *buf, size_t cap)
{
	size_t len = 0;

	buf[0] = 0;
	for (int i = 0; i < OPS_NISAS; i++)
		if (ops_isa_host_has((enum ops_isa)i) && len < cap)
			len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? ", " : "",
						ISA_NAMES[i]);
}

int ops_isa_select(enum ops_isa i, struct opr_error *err)
{
	char have[64];

	if ((unsigned)i >= OPS_NISAS)
		return opr_error_set(err, OPR_EINPUT, "unknown kernel path %d", (int)i);
	if (!ops_isa_host_has(i)) {
		host_list(have, sizeof have);
		return opr_error_set(err, OPR_ELIMIT,
				     "kernel path '%s' needs instructions this CPU lacks (it runs %s)",
				     ISA_NAMES[i], have);
	}
	ops_kern = table_of(i);
	return 0;
}

int ops_isa_from_env(struct opr_error *err)
{
	const char *s = getenv("OPREVIEW_ISA");
	enum ops_isa i;

	if (!s)
		return 0;
	if (ops_isa_parse(s, &i))
		return opr_error_set(err, OPR_EINPUT,
				     "OPREVIEW_ISA: '%s' is not a kernel path (scalar, avx2, avx512)", s);
	return ops_isa_select(i, err);
}

/* Start-up: the best path the host runs, or OPREVIEW_ISA's when it names
 * one the host has (a bad value is reported by ops_isa_from_env, which the
 * command line calls before anything runs). */
__attribute__((constructor)) static void isa_startup(void)
{
	enum ops_isa i;
	const char *s = getenv("OPREVIEW_ISA");

	if (!s || ops_isa_parse(s, &i) || !ops_isa_host_has(i))
		i = ops_isa_host_best();
	ops_kern = table_of(i);
}

const char *ops_kfam_name(enum ops_kfam f)
{
	return (unsigned)f < OPS_NKFAMS ? KFAM_NAMES[f] : "?";
}

const char *ops_kfam_path(enum ops_kfam f)
{
	return (unsigned)f < OPS_NKFAMS ? ops_kern->path[f] : "?";
}

/* ---- cache geometry for the streaming transposes (ops/kern_avx2.c,
 * ops/kern_avx512.c) ---------------------------------------------------------- */

/* L2's size and the bytes of one of its ways (size / associativity), read
 * once from the C library; 1 MiB and 64 KiB where it does not say. Source
 * rows whose byte offsets agree modulo a way share L2 sets. */
int64_t ops_l2_bytes(int way)
{
	static _Atomic int64_t cached_size, cached_way;
	int64_t v = atomic_load_explicit(way ? &cached_way : &cached_size, memory_order_relaxed);

	if (v)
		return v;
	long size = sysconf(_SC_LEVEL2_CACHE_SIZE), ways = sysconf(_SC_LEVEL2_CACHE_ASSOC);
	int ok = size >= 65536 && ways > 0 && size / ways >= 4096;
	atomic_store_explicit(&cached_size, ok ? (int64_t)size : (int64_t)1 << 20,
			      memory_order_relaxed);
	atomic_store_explicit(&cached_way, ok ? (int64_t)(size / ways) : 65536,
			      memory_order_relaxed);
	return atomic_load_explicit(way ? &cached_way : &cached_size, memory_order_relaxed);
}

static int64_t gcd64(int64_t a, int64_t b)
{
	while (b) {
		int64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

/* Whether a band's 32 rows, lds floats apart, fall on at most 8
 * distinct offsets within an L2 way (4 or more rows on each): the row
 * stride a multiple of 16 KiB or more on this VM's 128 KiB ways. There the
 * bands lost to the tile order before (2 KiB runs of 64 rows in 16 KiB
 * windows; stand-alone, 1 GiB each, ms): strides of 16 KiB 176 against
 * 159, 32 KiB 186/138, 48 KiB 178/167, 64 KiB 168/143, 256 KiB 153-159/
 * 143-147. Where the rows fall on 16 or more offsets the bands were
 * within 3% or faster: 8 KiB 181/184, 12 KiB 145/141, 264 KiB 153/160, and
 * 280000 bytes (the [4096, 70000] rows) 115-126/159. */
int ops_tr_rows_alias(int64_t lds)
{
	const int64_t way = ops_l2_bytes(1), st = (lds * (int64_t)sizeof(float)) % way;
	const int64_t offsets = way / gcd64(st ? st : way, way);

	return offsets <= 8;
}
