/* tests/test_isa.h: runs a kernel test once per host kernel path (portable,
 * AVX2, AVX-512). ISA_TESTS(f) expands to three cmocka tests whose state is
 * the path; f starts with isa_use(state), which switches every kernel family
 * to that path, or skip()s the test when the host lacks it (never a pass).
 * ISA_TESTS_NO_VNNI(f) adds a fourth on the table an AVX-512 CPU without
 * VNNI runs (its int8 GEMM the AVX2 path's), composed on any AVX-512 host;
 * ISA_TESTS_NO_AMX(f) one on the AVX-512 table as a CPU without AMX runs it
 * (Ice Lake, Zen 4: bf16 conv widened to fp32), on any AVX-512 host. On a
 * host with AVX-VNNI the avx2 path's int8 GEMM is the vpdpbusd one
 * (ops_kern_avx2_with_vnni); ISA_TESTS_NO_VNNI(f) then also runs the plain
 * AVX2 table (the exact int16-pair kernel an AVX2 CPU without it runs).
 * The teardown puts back the best path the host has. */
#ifndef TESTS_TEST_ISA_H
#define TESTS_TEST_ISA_H

#include "../ops/isa_int.h"
#include "../ops/ops.h"
#include "skip.h"

#define ISA_NO_VNNI OPS_NISAS
#define ISA_NO_AMX (OPS_NISAS + 1)
#define ISA_NO_AVX_VNNI (OPS_NISAS + 2)
static const int ISA_PATHS[OPS_NISAS + 3] = { OPS_ISA_SCALAR, OPS_ISA_AVX2, OPS_ISA_AVX512,
					      ISA_NO_VNNI, ISA_NO_AMX, ISA_NO_AVX_VNNI };
/* The AVX-512 table without its AMX probe: conv2d then takes bf16 as a CPU
 * without AMX does (conv_bf16_ready is how it asks). */
static struct ops_kern isa_no_amx_table;

static int isa_teardown(void **state)
{
	(void)state;
	(void)ops_avx512_qgemm_chunk_force(0);
	return ops_isa_select(ops_isa_host_best(), NULL);
}

/* Selects the test's path; skips (cmocka skip(), which does not return)
 * when the host cannot run it. */
static void isa_use(void **state)
{
	const int path = *(const int *)*state;
	enum ops_isa i = path >= ISA_NO_VNNI ? OPS_ISA_AVX512 : (enum ops_isa)path;

	if (path == ISA_NO_AVX_VNNI) {
		if (!ops_isa_host_has(OPS_ISA_AVX2))
			SKIP_BECAUSE("this CPU lacks the avx2 kernel path");
		if (!ops_isa_host_has_avx_vnni())
			SKIP_BECAUSE("this CPU has no avx-vnni: its avx2 path is the plain one");
		ops_kern = &ops_kern_avx2;
		return;
	}

	if (path >= ISA_NO_VNNI && !ops_isa_host_has(OPS_ISA_AVX512))
		SKIP_BECAUSE("this CPU lacks the avx512 kernel path");
	if (path == ISA_NO_VNNI) {
		ops_kern = ops_kern_avx512_without_vnni();
		assert_int_equal(ops_kfam_isa(OPS_KF_QGEMM), OPS_ISA_AVX2);
		return;
	}
	if (path == ISA_NO_AMX) {
		assert_int_equal(ops_isa_select(OPS_ISA_AVX512, NULL), 0);
		isa_no_amx_table = *ops_kern;
		isa_no_amx_table.conv_bf16_ready = NULL;
		ops_kern = &isa_no_amx_table;
		return;
	}
	if (!ops_isa_host_has(i))
		SKIP_BECAUSE("this CPU lacks the %s kernel path", ops_isa_name(i));
	assert_int_equal(ops_isa_select(i, NULL), 0);
	assert_int_equal(ops_isa_active(), i);
}

#define ISA_TEST(f, i, n) { #f "/" n, f, NULL, isa_teardown, (void *)&ISA_PATHS[i] }
#define ISA_TESTS(f) ISA_TEST(f, 0, "scalar"), ISA_TEST(f, 1, "avx2"), ISA_TEST(f, 2, "avx512")
#define ISA_TESTS_NO_VNNI(f)                                                             \
	ISA_TESTS(f), ISA_TEST(f, 3, "avx512-no-vnni"), ISA_TEST(f, 5, "avx2-no-avx-vnni")
#define ISA_TESTS_NO_AMX(f) ISA_TESTS(f), ISA_TEST(f, 4, "avx512-no-amx")

#endif
