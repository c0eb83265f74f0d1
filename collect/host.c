/* collect/host.c: facts about the host for the manifest: CPU, caches, kernel,
 * governor, compiler and flags, library versions, tool revision. Every fact is
 * detected here; the profile's metadata is recorded separately, verbatim. */
#include "collect.h"

#include <cmark-gfm.h>
#include <jansson.h>
#include <libfyaml.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <xlsxwriter.h>

#ifndef OPR_CFLAGS
#define OPR_CFLAGS "unknown"
#endif

static void read_first_line(const char *path, char *buf, size_t len, const char *missing)
{
	FILE *f = fopen(path, "r");
	if (!f || !fgets(buf, (int)len, f)) {
		snprintf(buf, len, "%s", missing);
		if (f)
			fclose(f);
		return;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
}

static void detect_cpu_model(char *buf, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];
	snprintf(buf, len, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "model name", 10))
			continue;
		char *colon = strchr(line, ':');
		if (colon) {
			colon++;
			while (*colon == ' ' || *colon == '\t')
				colon++;
			colon[strcspn(colon, "\n")] = '\0';
			snprintf(buf, len, "%s", colon);
		}
		break;
	}
	fclose(f);
}

/* "L1d 32K, L1i 32K, L2 512K, L3 32768K" from sysfs of cpu0. */
static void detect_caches(char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (int i = 0; i < 8; i++) {
		char path[128], level[16], type[32], size[32];
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
		if (access(path, R_OK))
			break;
		read_first_line(path, level, sizeof level, "?");
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
		read_first_line(path, type, sizeof type, "?");
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		read_first_line(path, size, sizeof size, "?");
		const char *t = !strcmp(type, "Data") ? "d" : !strcmp(type, "Instruction") ? "i" : "";
		int w = snprintf(buf + used, len - used, "%sL%s%s %s", used ? ", " : "", level, t, size);
		if (w < 0 || (size_t)w >= len - used)
			break;
		used += (size_t)w;
	}
	if (!used)
		snprintf(buf, len, "unavailable: no cache information in sysfs");
}

void col_host_detect(struct col_host *h)
{
	memset(h, 0, sizeof *h);
	detect_cpu_model(h->cpu_model, sizeof h->cpu_model);
	h->cpus_online = (int)sysconf(_SC_NPROCESSORS_ONLN);
	detect_caches(h->caches, sizeof h->caches);
	struct utsname u;
	if (!uname(&u))
		snprintf(h->kernel, sizeof h->kernel, "%s %s %s", u.sysname, u.release, u.machine);
	read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", h->governor,
			sizeof h->governor, "unavailable: no cpufreq in sysfs (virtual machine?)");
	snprintf(h->compiler, sizeof h->compiler, "gcc %s", __VERSION__);
	snprintf(h->cflags, sizeof h->cflags, "-std=c11 %s", OPR_CFLAGS);
	char papi[32];
	col_papi_version(papi, sizeof papi);
	snprintf(h->versions, sizeof h->versions,
		 "papi %s; libxlsxwriter %s; cmark-gfm %s; libfyaml %s; jansson %s; libsodium %s",
		 papi, LXW_VERSION, cmark_version_string(), fy_library_version(),
		 JANSSON_VERSION, sodium_version_string());
	snprintf(h->tool_version, sizeof h->tool_version, "%s", OPR_VERSION);
	snprintf(h->git_revision, sizeof h->git_revision, "%s", OPR_GIT_REVISION);
	if (gethostname(h->hostname, sizeof h->hostname))
		snprintf(h->hostname, sizeof h->hostname, "unknown");
	enum ops_isa isa = ops_isa_active(), best = ops_isa_host_best();
	if (isa == best)
		snprintf(h->kernel_isa, sizeof h->kernel_isa, "%s", ops_isa_name(isa));
	else
		snprintf(h->kernel_isa, sizeof h->kernel_isa, "%s (OPREVIEW_ISA; the host has %s)",
			 ops_isa_name(isa), ops_isa_name(best));
	size_t used = 0;
	for (int f = 0; f < OPS_NKFAMS && used < sizeof h->kernel_paths; f++)
		used += (size_t)snprintf(h->kernel_paths + used, sizeof h->kernel_paths - used,
					 "%s%s %s", f ? "; " : "", ops_kfam_name((enum ops_kfam)f),
					 ops_kfam_path((enum ops_kfam)f));
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	if (pages > 0 && psize > 0)
		h->mem_total_bytes = (uint64_t)pages * (uint64_t)psize;
}
