/* collect/cmd_calibrate.c: `opreview calibrate`: measure this host and write
 * it as an envelope file (atomically; never over an existing file without
 * --force), or print it on stdout when --out is not given. */
#include "calibrate.h"
#include "../opreview_cmds.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cmd_calibrate(int argc, char **argv)
{
	const char *out = NULL, *name = NULL, *device = NULL;
	int force = 0, quick = 0;
	const struct opr_option opts[] = {
		{OPR_OPT_PATH, "out", "FILE", "write the envelope to FILE (default: stdout)", &out},
		{OPR_OPT_FLAG, "force", NULL, "replace FILE if it exists", &force},
		{OPR_OPT_STRING, "name", "NAME", "the envelope's name (default: host)", &name},
		{OPR_OPT_FLAG, "quick", NULL, "fewer samples and smaller arrays (about 2 s; for tests)", &quick},
		{OPR_OPT_STRING, "device", "DEV", "host (default), cuda or cuda:N: the GPU (CUDA build)", &device},
		{OPR_OPT_END, NULL, NULL, NULL, NULL}};
	const struct opr_command_help help = {
		"calibrate", "calibrate [--out FILE] [--force] [--name NAME] [--quick] [--device DEV]",
		"Measure this host as an envelope: cores 1 (the host executor is single-threaded),\n"
		"fp32 FMA peak, the exact int8 dot-product peak, the conv microkernel's fp16/bf16\n"
		"rates, the qgemm int8 rate, the activation's element-wise (vector) rates on fp32\n"
		"and on bf16 data, DRAM bandwidth (GLOBAL), the L2's bandwidth (SHARED, capacity\n"
		"from sysfs), the per-transfer DMA setup and the launch cost; the copies run on\n"
		"the computing thread (dma.serial: true). Where the one-pass qgemm's run is\n"
		"bound by its stream (VNNI paths), the share of the read rate it streams at\n"
		"(one_pass: {qgemm}, the model's G / share for such launches). Each value is\n"
		"written with its median, spread (IQR / median) and sample count under\n"
		"calibration:, with the host and the date. A profile whose envelope is\n"
		"calibrated gets a model\n"
		"validation: modelled vs measured times per block, variant and plan.\n"
		"Every loop runs the host kernel path that will run (OPREVIEW_ISA or the best\n"
		"this CPU has), recorded as calibration.kernel_isa.\n"
		"--device cuda (build-cuda/opreview only) measures the GPU instead: HBM and L2\n"
		"copy bandwidth (read + written), shared-memory bandwidth per SM, FFMA, fp16/bf16\n"
		"mma.sync, int8 dp4a and mma.sync peaks, the SiLU element rate, one HBM load's\n"
		"latency, the first and each further launch of a run (L2 flushed, CUDA events), and\n"
		"our own kernels per family (conv, conv_gemm, qgemm, permute, permute_rows,\n"
		"elementwise): the planner's top plans timed and fitted, on the relative error, into\n"
		"the envelope's kernels: efficiency and transfer_ns; cores = SMs, SHARED from the\n"
		"device.",
		"Exit status: 0 written, 1 failure, 2 bad usage, 5 FILE exists (pass --force) or is\n"
		"being written by another opreview, 6 --device cuda without the CUDA backend or\n"
		"without a usable GPU, 130/143 interrupted (nothing left behind).", opts};
	struct opr_error err = {0};
	const char *pos[1];
	int npos, rc;
	if (opr_cmd_start(&help, argc, argv, pos, 0, &npos, NULL, 0, "", &rc))
		return rc;
	int gpu = -1; /* the CUDA device's ordinal, -1 for the host */
	if (device && strcmp(device, "host")) {
		char *end = NULL;
		long idx = !strcmp(device, "cuda") ? 0
			 : !strncmp(device, "cuda:", 5) && device[5] ? strtol(device + 5, &end, 10) : -1;
		if (idx < 0 || idx > COL_DEV_INDEX_MAX || (end && *end)) {
			opr_error_set(&err, OPR_EUSAGE, "calibrate: --device '%s': want host, cuda or cuda:N",
				      device);
			return opr_fail(&err);
		}
		gpu = (int)idx;
		if (!col_device_available(COL_DEV_CUDA)) {
			opr_error_set(&err, OPR_ENODEV, "calibrate: --device %s: this opreview is built "
				      "without the CUDA backend (`make cuda` builds build-cuda/opreview)",
				      device);
			return opr_fail(&err);
		}
	}
	/* the envelope file is claimed first: a second calibrate into it stops
	 * here, not after the measurement */
	struct opr_output of;
	if (out && (rc = opr_output_claim(&of, out, OPR_OUT_FILE, NULL, force, &err))) {
		opr_output_release(&of);
		return opr_fail(&err);
	}
	struct col_cal_options o = {quick, name};
	struct ops_envelope env;
	struct col_calibration cal;
	char *text = NULL;
	if (isatty(2))
		fprintf(stderr, "opreview: calibrating %s (%s)...\n", gpu >= 0 ? "the GPU" : "this host",
			quick ? "about 2 s" : "about 8 s");
	rc = gpu >= 0 ? col_calibrate_gpu(&o, gpu, &env, &cal, &err) : col_calibrate(&o, &env, &cal, &err);
	if (!rc)
		rc = col_calibration_yaml(&env, &cal, &text, &err);
	if (!rc && out) {
		if (!(rc = opr_output_open(&of, &err)) &&
		    !(rc = opr_write_file(of.tmp, text, strlen(text), &err)))
			rc = opr_output_publish(&of, &err);
	} else if (!rc) {
		fputs(text, stdout);
	}
	if (out && rc)
		opr_output_name(&of, &err);
	if (out)
		opr_output_release(&of);
	free(text);
	if (rc)
		return opr_fail(&err);
	if (out)
		printf("envelope: %s\n", out);
	return OPR_EXIT_OK;
}
