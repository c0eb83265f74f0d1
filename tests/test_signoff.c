/* tests/test_signoff.c: owner sign-off: key files (mode, no overwrite, OpenSSL
 * interoperability), the canonical manifest, sign/verify round trips on seeded
 * random packets with three roles, and every tampering verify must catch. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../report/report.h"
#include "../opreview_cmds.h"

/* ---- helpers --------------------------------------------------------------- */

static uint64_t rng_state = 0x5160ff;

static uint64_t rnd(void) /* SplitMix64 */
{
	uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static char root[64];    /* the test's temporary folder */
static char keydir[128]; /* root/keys: compiler, kernel, runtime, intruder */

static const char *const roles[3] = {"ml-compiler-engineer", "kernel-performance-owner",
	"runtime-systems-engineer"};
static const char *const keynames[3] = {"compiler", "kernel", "runtime"};
static const char *const names[3] = {"compiler-owner@example.org", "kernel-owner@example.org",
	"runtime-owner@example.org"};

static void poison_err(struct opr_error *e)
{
	memset(e, 0x5A, sizeof *e);
	e->file[sizeof e->file - 1] = '\0';
	e->msg[sizeof e->msg - 1] = '\0';
}

static void path_in(char *out, size_t cap, const char *dir, const char *name)
{
	assert_true(snprintf(out, cap, "%s/%s", dir, name) < (int)cap);
}

static void write_bytes(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static char *read_bytes(const char *path, size_t *len)
{
	struct opr_error err;
	char *data = NULL;
	poison_err(&err);
	assert_int_equal(opr_read_file(path, &data, len, 1u << 26, &err), 0);
	return data;
}

/* Silences stdout and stderr around a cmd_* call. */
static int quiet(int (*cmd)(int, char **), int argc, char **argv)
{
	fflush(stdout);
	fflush(stderr);
	int o = dup(1), e = dup(2), n = open("/dev/null", O_WRONLY);
	assert_true(o >= 0 && e >= 0 && n >= 0);
	dup2(n, 1);
	dup2(n, 2);
	int rc = cmd(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(o, 1);
	dup2(e, 2);
	close(o);
	close(e);
	close(n);
	return rc;
}

static const char *const packet_files[] = {"packet.md", "packet.html", "packet.xlsx",
	"findings.json", "run/manifest.json", "run/samples.csv", "run/counters.csv",
	"run/ops/conv-small.bin", ".hidden", NULL};

/* A packet of seeded random files (never empty) and owners.json for the
 * three roles with the keys in keydir. */
static void make_packet(const char *dir)
{
	char p[512];
	struct col_owner own[3];
	struct opr_error err;
	assert_int_equal(mkdir(dir, 0755), 0);
	path_in(p, sizeof p, dir, "run");
	assert_int_equal(mkdir(p, 0755), 0);
	path_in(p, sizeof p, dir, "run/ops");
	assert_int_equal(mkdir(p, 0755), 0);
	for (int i = 0; packet_files[i]; i++) {
		size_t n = 1 + rnd() % 5000;
		unsigned char *b = malloc(n);
		assert_non_null(b);
		for (size_t k = 0; k < n; k++)
			b[k] = (unsigned char)(1 + rnd() % 255);
		path_in(p, sizeof p, dir, packet_files[i]);
		write_bytes(p, b, n);
		free(b);
	}
	memset(own, 0, sizeof own);
	for (int i = 0; i < 3; i++) {
		snprintf(own[i].role, sizeof own[i].role, "%s", roles[i]);
		snprintf(own[i].name, sizeof own[i].name, "%s", names[i]);
		snprintf(own[i].key, sizeof own[i].key, "keys/%s.pub", keynames[i]);
	}
	poison_err(&err);
	assert_int_equal(rep_owners_write(dir, own, 3, root, &err), 0);
}

static int sign_as(const char *dir, int role, const char *keyname, int reject,
		   const char *comment, struct opr_error *err)
{
	char key[256];
	snprintf(key, sizeof key, "%s/%s.key", keydir, keyname);
	struct rep_sign_options o = {roles[role], key, comment, reject, 1700000000};
	struct rep_signoff_info info;
	memset(&info, 0x5A, sizeof info);
	poison_err(err);
	int rc = rep_sign(dir, &o, &info, err);
	if (!rc) {
		assert_string_equal(info.role, roles[role]);
		assert_string_equal(info.owner, names[role]);
		assert_string_equal(info.time, "2023-11-14T22:13:20Z");
		assert_int_equal(strlen(info.manifest_sha256), 64);
	}
	return rc;
}

static void make_signed_packet(const char *dir)
{
	struct opr_error err;
	make_packet(dir);
	for (int i = 0; i < 3; i++)
		assert_int_equal(sign_as(dir, i, keynames[i], 0, "looks right", &err), 0);
}

static void verify(const char *dir, struct rep_verify_result *res)
{
	struct opr_error err;
	poison_err(&err);
	memset(res, 0x5A, sizeof *res);
	int rc = rep_verify(dir, res, &err);
	if (rc)
		fail_msg("rep_verify: %s", err.msg);
}

static void expect_signed_off(const char *dir)
{
	struct rep_verify_result res;
	verify(dir, &res);
	assert_true(res.manifest_present);
	assert_true(res.manifest_ok);
	assert_string_equal(res.differences, "");
	assert_string_equal(res.problems, "");
	assert_int_equal(res.nroles, 3);
	for (int i = 0; i < 3; i++) {
		assert_string_equal(res.roles[i].role, roles[i]);
		assert_int_equal(res.roles[i].state, REP_ROLE_APPROVED);
	}
	assert_true(res.signed_off);
	assert_string_equal(res.summary, "signed off");
	rep_verify_release(&res);
}

static void rm_rf(const char *p)
{
	assert_int_equal(opr_rmtree(p), 0);
}

static int setup(void **state)
{
	(void)state;
	struct opr_error err;
	if (sodium_init() < 0)
		return -1;
	snprintf(root, sizeof root, "/tmp/test_signoff.XXXXXX");
	if (!mkdtemp(root))
		return -1;
	snprintf(keydir, sizeof keydir, "%s/keys", root);
	if (mkdir(keydir, 0755))
		return -1;
	const char *all[] = {"compiler", "kernel", "runtime", "intruder"};
	for (int i = 0; i < 4; i++) {
		char name[256];
		snprintf(name, sizeof name, "%s/%s", keydir, all[i]);
		if (rep_keygen(name, &err))
			return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return opr_rmtree(root) == 0 ? 0 : -1;
}

/* ---- keys ------------------------------------------------------------------ */

static void test_keygen_mode_and_no_overwrite(void **state)
{
	(void)state;
	char name[128], kp[256], pp[256];
	struct opr_error err;
	struct stat st;
	unsigned char seed[32], pk[32], pk2[32];
	snprintf(name, sizeof name, "%s/k1", root);
	snprintf(kp, sizeof kp, "%s.key", name);
	snprintf(pp, sizeof pp, "%s.pub", name);

	mode_t old = umask(0); /* the key is 0600 whatever the umask */
	poison_err(&err);
	int rc = rep_keygen(name, &err);
	umask(old);
	assert_int_equal(rc, 0);
	assert_int_equal(stat(kp, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(stat(pp, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);

	size_t klen, plen;
	char *k = read_bytes(kp, &klen), *p = read_bytes(pp, &plen);
	assert_int_equal(klen, 28 + 65 + 26); /* BEGIN line, 64 base64 + \n, END line */
	assert_memory_equal(k, "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEI", 49);
	assert_memory_equal(p, "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA", 43);
	poison_err(&err);
	assert_int_equal(rep_key_read_private(kp, seed, pk, &err), 0);
	assert_int_equal(rep_key_read_public(pp, pk2, &err), 0);
	assert_memory_equal(pk, pk2, 32);
	char pem[REP_PUBLIC_PEM_MAX];
	rep_key_public_pem(pk, pem);
	assert_int_equal(strlen(pem), plen);
	assert_memory_equal(pem, p, plen);

	/* a second keygen refuses and leaves both files as they were */
	poison_err(&err);
	assert_int_equal(rep_keygen(name, &err), OPR_EEXIST);
	assert_non_null(strstr(err.msg, "k1.key' exists; refusing to overwrite"));
	size_t klen2, plen2;
	char *k2 = read_bytes(kp, &klen2), *p2 = read_bytes(pp, &plen2);
	assert_int_equal(klen2, klen);
	assert_memory_equal(k2, k, klen);
	assert_int_equal(plen2, plen);
	assert_memory_equal(p2, p, plen);

	/* .pub alone in the way: refused, and no .key is left behind */
	assert_int_equal(unlink(kp), 0);
	poison_err(&err);
	assert_int_equal(rep_keygen(name, &err), OPR_EEXIST);
	assert_non_null(strstr(err.msg, "k1.pub' exists"));
	assert_int_equal(access(kp, F_OK), -1);

	/* two key pairs differ */
	char name2[128], pp2[256];
	unsigned char pk3[32];
	snprintf(name2, sizeof name2, "%s/k2", root);
	snprintf(pp2, sizeof pp2, "%s.pub", name2);
	assert_int_equal(rep_keygen(name2, &err), 0);
	assert_int_equal(rep_key_read_public(pp2, pk3, &err), 0);
	assert_memory_not_equal(pk3, pk, 32);

	/* cmd_keygen: the same refusal is exit status 5, a missing --out is 2 */
	char *argv1[] = {"keygen", "--out", name2, NULL};
	assert_int_equal(quiet(cmd_keygen, 3, argv1), OPR_EXIT_EXISTS);
	char *argv2[] = {"keygen", NULL};
	assert_int_equal(quiet(cmd_keygen, 1, argv2), OPR_EXIT_USAGE);
	char *argv3[] = {"keygen", "--help", NULL};
	assert_int_equal(quiet(cmd_keygen, 2, argv3), OPR_EXIT_OK);
	sodium_memzero(seed, sizeof seed);
	free(k);
	free(p);
	free(k2);
	free(p2);
	char tmp[256];
	snprintf(tmp, sizeof tmp, "%s.key", name2);
	unlink(tmp);
	unlink(pp2);
	unlink(pp);
}

static void test_key_parse_rejects(void **state)
{
	(void)state;
	struct opr_error err;
	unsigned char pk[32], seed[32];
	char b64[128], pem[256], path[256];
	unsigned char der[44] = {0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00};
	for (int i = 12; i < 44; i++)
		der[i] = (unsigned char)rnd();

	/* the right DER parses to its key bytes */
	sodium_bin2base64(b64, sizeof b64, der, 44, sodium_base64_VARIANT_ORIGINAL);
	snprintf(pem, sizeof pem, "-----BEGIN PUBLIC KEY-----\n%s\n-----END PUBLIC KEY-----\n", b64);
	memset(pk, 0x5A, sizeof pk);
	poison_err(&err);
	assert_int_equal(rep_key_parse_public(pem, strlen(pem), "x", pk, &err), 0);
	assert_memory_equal(pk, der + 12, 32);

	/* X25519's OID (1.3.101.110) is not an Ed25519 key */
	der[8] = 0x6e;
	sodium_bin2base64(b64, sizeof b64, der, 44, sodium_base64_VARIANT_ORIGINAL);
	snprintf(pem, sizeof pem, "-----BEGIN PUBLIC KEY-----\n%s\n-----END PUBLIC KEY-----\n", b64);
	poison_err(&err);
	assert_int_equal(rep_key_parse_public(pem, strlen(pem), "x", pk, &err), OPR_EINPUT);
	assert_string_equal(err.msg, "'x' is not an Ed25519 public key (SPKI PEM)");
	der[8] = 0x70;
	/* one byte short */
	sodium_bin2base64(b64, sizeof b64, der, 43, sodium_base64_VARIANT_ORIGINAL);
	snprintf(pem, sizeof pem, "-----BEGIN PUBLIC KEY-----\n%s\n-----END PUBLIC KEY-----\n", b64);
	assert_int_equal(rep_key_parse_public(pem, strlen(pem), "x", pk, &err), OPR_EINPUT);
	/* no END line, garbage */
	assert_int_equal(rep_key_parse_public(pem, 40, "x", pk, &err), OPR_EINPUT);
	assert_int_equal(rep_key_parse_public("hello", 5, "x", pk, &err), OPR_EINPUT);
	/* a public key is not a private key, and the other way round */
	snprintf(path, sizeof path, "%s/runtime.pub", keydir);
	poison_err(&err);
	assert_int_equal(rep_key_read_private(path, seed, pk, &err), OPR_EINPUT);
	assert_non_null(strstr(err.msg, "is not an Ed25519 private key"));
	snprintf(path, sizeof path, "%s/runtime.key", keydir);
	assert_int_equal(rep_key_read_public(path, pk, &err), OPR_EINPUT);
	snprintf(path, sizeof path, "%s/nonexistent.key", keydir);
	assert_int_equal(rep_key_read_private(path, seed, pk, &err), OPR_EINPUT);
}

static int have_openssl(void)
{
	return access("/usr/bin/openssl", X_OK) == 0;
}

static void test_openssl_interop(void **state)
{
	(void)state;
	if (!have_openssl()) {
		skip();
		return;
	}
	char cmd[1024], a[256], b[256], c[256];
	struct opr_error err;
	unsigned char seed[32], pk[32], pk2[32];
	size_t la, lb;

	/* OpenSSL derives our .pub from our .key */
	snprintf(a, sizeof a, "%s/kernel.pub", keydir);
	snprintf(b, sizeof b, "%s/kernel.ossl.pub", root);
	snprintf(cmd, sizeof cmd, "openssl pkey -in '%s/kernel.key' -pubout -out '%s'", keydir, b);
	assert_int_equal(system(cmd), 0);
	char *x = read_bytes(a, &la), *y = read_bytes(b, &lb);
	assert_int_equal(la, lb);
	assert_memory_equal(x, y, la);
	free(x);
	free(y);

	/* we read OpenSSL's private keys and derive the key it derives */
	snprintf(c, sizeof c, "%s/ossl.key", root);
	snprintf(cmd, sizeof cmd, "openssl genpkey -algorithm ed25519 -out '%s' && "
		 "openssl pkey -in '%s' -pubout -out '%s'", c, c, b);
	assert_int_equal(system(cmd), 0);
	poison_err(&err);
	assert_int_equal(rep_key_read_private(c, seed, pk, &err), 0);
	assert_int_equal(rep_key_read_public(b, pk2, &err), 0);
	assert_memory_equal(pk, pk2, 32);
	unlink(b);
	unlink(c);
}

/* ---- the manifest ----------------------------------------------------------- */

static void test_manifest_lists_every_file(void **state)
{
	(void)state;
	char dir[256], p[512], *text = NULL;
	size_t len = 0, n = 0;
	struct opr_error err;
	snprintf(dir, sizeof dir, "%s/mf", root);
	make_packet(dir);
	/* MANIFEST and signoff/ at the top are not listed; a nested one is */
	path_in(p, sizeof p, dir, "MANIFEST");
	write_bytes(p, "junk", 4);
	path_in(p, sizeof p, dir, "signoff");
	assert_int_equal(mkdir(p, 0755), 0);
	path_in(p, sizeof p, dir, "signoff/x.json");
	write_bytes(p, "{}", 2);
	path_in(p, sizeof p, dir, "run/MANIFEST");
	write_bytes(p, "nested", 6);

	poison_err(&err);
	assert_int_equal(rep_manifest_build(dir, &text, &len, &n, &err), 0);
	assert_int_equal(strlen(text), len);
	assert_int_equal(n, 11); /* packet_files + owners.json + run/MANIFEST */
	const char *hdr = "opreview-manifest v1\n";
	assert_memory_equal(text, hdr, strlen(hdr));
	const char *s = text + strlen(hdr), *prev = NULL;
	size_t lines = 0, prevlen = 0;
	while (*s) {
		const char *nl = strchr(s, '\n');
		assert_non_null(nl);
		char rel[256], want[65];
		size_t plen = (size_t)(nl - s) - 66;
		assert_true(plen < sizeof rel);
		memcpy(rel, s + 66, plen);
		rel[plen] = '\0';
		assert_memory_equal(s + 64, "  ", 2);
		/* the digest is the file's SHA-256 */
		path_in(p, sizeof p, dir, rel);
		size_t flen;
		char *data = read_bytes(p, &flen);
		col_sha256_hex(data, flen, want);
		free(data);
		assert_memory_equal(s, want, 64);
		/* strictly increasing bytewise */
		if (prev) {
			size_t m = prevlen < plen ? prevlen : plen;
			int c = memcmp(prev, s + 66, m);
			assert_true(c < 0 || (c == 0 && prevlen < plen));
		}
		assert_true(strcmp(rel, "MANIFEST") && strncmp(rel, "signoff/", 8));
		prev = s + 66;
		prevlen = plen;
		lines++;
		s = nl + 1;
	}
	assert_int_equal(lines, n);
	free(text);

	/* a symbolic link, a FIFO and a newline in a name are refused */
	path_in(p, sizeof p, dir, "run/link");
	assert_int_equal(symlink("../packet.md", p), 0);
	poison_err(&err);
	text = NULL;
	assert_int_equal(rep_manifest_build(dir, &text, &len, NULL, &err), OPR_EINPUT);
	assert_string_equal(err.msg, "'run/link' is a symbolic link; a packet holds regular files only");
	assert_null(text);
	unlink(p);
	path_in(p, sizeof p, dir, "fifo");
	assert_int_equal(mkfifo(p, 0600), 0);
	poison_err(&err);
	assert_int_equal(rep_manifest_build(dir, &text, &len, NULL, &err), OPR_EINPUT);
	assert_string_equal(err.msg, "'fifo' is not a regular file");
	unlink(p);
	path_in(p, sizeof p, dir, "a\nb");
	write_bytes(p, "x", 1);
	poison_err(&err);
	assert_int_equal(rep_manifest_build(dir, &text, &len, NULL, &err), OPR_EINPUT);
	assert_non_null(strstr(err.msg, "holds a newline"));
	rm_rf(dir);
}

static void test_manifest_diff(void **state)
{
	(void)state;
	char h[4][65], a[1024], b[1024], *diff = (char *)0x1;
	size_t c[3] = {99, 99, 99};
	struct opr_error err;
	for (int i = 0; i < 4; i++) {
		unsigned char x[8];
		for (int k = 0; k < 8; k++)
			x[k] = (unsigned char)rnd();
		col_sha256_hex(x, sizeof x, h[i]);
	}
	snprintf(a, sizeof a, "opreview-manifest v1\n%s  a\n%s  b\n%s  run/c\n", h[0], h[1], h[2]);
	snprintf(b, sizeof b, "opreview-manifest v1\n%s  a\n%s  b\n%s  d\n", h[0], h[3], h[2]);
	poison_err(&err);
	assert_int_equal(rep_manifest_diff(a, strlen(a), b, strlen(b), &diff, c, &err), 0);
	assert_string_equal(diff, "changed: b\nadded: d\nremoved: run/c\n");
	assert_int_equal(c[0], 1);
	assert_int_equal(c[1], 1);
	assert_int_equal(c[2], 1);
	free(diff);
	assert_int_equal(rep_manifest_diff(a, strlen(a), a, strlen(a), &diff, c, &err), 0);
	assert_string_equal(diff, "");
	assert_int_equal(c[0] + c[1] + c[2], 0);
	free(diff);

	/* malformed recorded manifests */
	const char *bad[] = {"opreview-manifest v2\n", "", NULL, NULL, NULL};
	char dup[512], nohex[512], nonl[512];
	snprintf(dup, sizeof dup, "opreview-manifest v1\n%s  a\n%s  a\n", h[0], h[1]);
	snprintf(nohex, sizeof nohex, "opreview-manifest v1\n%.63sX  a\n", h[0]);
	snprintf(nonl, sizeof nonl, "opreview-manifest v1\n%s  a", h[0]);
	bad[2] = dup;
	bad[3] = nohex;
	bad[4] = nonl;
	for (int i = 0; i < 5; i++) {
		poison_err(&err);
		assert_int_equal(rep_manifest_diff(bad[i], strlen(bad[i]), a, strlen(a), &diff, c, &err),
				 OPR_EINPUT);
	}
}

/* ---- sign and verify ----------------------------------------------------------- */

static void test_round_trip(void **state)
{
	(void)state;
	char dir[256], p[512];
	struct rep_verify_result res;
	struct opr_error err;
	snprintf(dir, sizeof dir, "%s/rt", root);
	make_packet(dir);

	/* owners.json carries each role's public key as the .pub file's text */
	path_in(p, sizeof p, dir, "owners.json");
	json_error_t je;
	json_t *o = json_load_file(p, 0, &je);
	assert_non_null(o);
	json_t *arr = json_object_get(o, "owners");
	assert_int_equal(json_array_size(arr), 3);
	for (int i = 0; i < 3; i++) {
		json_t *e = json_array_get(arr, (size_t)i);
		char kp[256];
		size_t kl;
		snprintf(kp, sizeof kp, "%s/%s.pub", keydir, keynames[i]);
		char *pem = read_bytes(kp, &kl);
		assert_string_equal(json_string_value(json_object_get(e, "role")), roles[i]);
		assert_string_equal(json_string_value(json_object_get(e, "name")), names[i]);
		assert_string_equal(json_string_value(json_object_get(e, "public_key_pem")), pem);
		free(pem);
	}
	json_decref(o);

	/* nothing signed yet */
	verify(dir, &res);
	assert_false(res.manifest_present);
	assert_int_equal(res.nfiles, 10);
	for (int i = 0; i < 3; i++)
		assert_int_equal(res.roles[i].state, REP_ROLE_MISSING);
	assert_false(res.signed_off);
	assert_string_equal(res.summary, "not signed off: no MANIFEST; ml-compiler-engineer missing; "
			    "kernel-performance-owner missing; runtime-systems-engineer missing");
	rep_verify_release(&res);

	/* two of three: not yet */
	assert_int_equal(sign_as(dir, 0, "compiler", 0, "ok", &err), 0);
	assert_int_equal(sign_as(dir, 1, "kernel", 0, "ok", &err), 0);
	verify(dir, &res);
	assert_true(res.manifest_present && res.manifest_ok);
	assert_int_equal(res.roles[0].state, REP_ROLE_APPROVED);
	assert_string_equal(res.roles[0].time, "2023-11-14T22:13:20Z");
	assert_string_equal(res.roles[0].detail, "ok");
	assert_int_equal(res.roles[2].state, REP_ROLE_MISSING);
	assert_string_equal(res.summary, "not signed off: runtime-systems-engineer missing");
	rep_verify_release(&res);

	assert_int_equal(sign_as(dir, 2, "runtime", 0, "ship it", &err), 0);
	expect_signed_off(dir);
	char *argv[] = {"verify", dir, NULL};
	assert_int_equal(quiet(cmd_verify, 2, argv), OPR_EXIT_OK);

	/* the record: its fields, and a signature over the canonical text that
	 * libsodium (and OpenSSL, when present) verifies */
	path_in(p, sizeof p, dir, "signoff/runtime-systems-engineer.json");
	o = json_load_file(p, JSON_REJECT_DUPLICATES, &je);
	assert_non_null(o);
	assert_int_equal(json_object_size(o), 7);
	const char *keys[] = {"role", "owner", "decision", "comment", "time", "manifest_sha256",
		"signature"};
	const char *vals[7] = {0};
	for (int i = 0; i < 7; i++)
		assert_non_null(vals[i] = json_string_value(json_object_get(o, keys[i])));
	assert_string_equal(vals[2], "approve");
	assert_string_equal(vals[3], "ship it");
	size_t ml;
	char mp[512], want[65];
	path_in(mp, sizeof mp, dir, "MANIFEST");
	char *mtext = read_bytes(mp, &ml);
	col_sha256_hex(mtext, ml, want);
	free(mtext);
	assert_string_equal(vals[5], want);
	char text[1024];
	snprintf(text, sizeof text, "opreview-signoff v1\nrole=%s\nowner=%s\ndecision=%s\n"
		 "comment=%s\ntime=%s\nmanifest_sha256=%s\n", vals[0], vals[1], vals[2], vals[3],
		 vals[4], vals[5]);
	unsigned char sig[64], pk[32];
	size_t sl;
	assert_int_equal(sodium_base642bin(sig, sizeof sig, vals[6], strlen(vals[6]), NULL, &sl,
					   NULL, sodium_base64_VARIANT_ORIGINAL), 0);
	assert_int_equal(sl, 64);
	char kp[256];
	snprintf(kp, sizeof kp, "%s/runtime.pub", keydir);
	assert_int_equal(rep_key_read_public(kp, pk, &err), 0);
	assert_int_equal(crypto_sign_verify_detached(sig, (unsigned char *)text, strlen(text), pk), 0);
	text[strlen(text) - 2] ^= 1; /* one bit of the digest */
	assert_int_equal(crypto_sign_verify_detached(sig, (unsigned char *)text, strlen(text), pk), -1);
	text[strlen(text) - 2] ^= 1;
	if (have_openssl()) {
		char tp[512], sp[512], cmd[2048];
		path_in(tp, sizeof tp, root, "record.txt");
		path_in(sp, sizeof sp, root, "record.sig");
		write_bytes(tp, text, strlen(text));
		write_bytes(sp, sig, 64);
		snprintf(cmd, sizeof cmd, "openssl pkeyutl -verify -pubin -inkey '%s' -rawin -in '%s' "
			 "-sigfile '%s' >/dev/null", kp, tp, sp);
		assert_int_equal(system(cmd), 0);
		unlink(tp);
		unlink(sp);
	}
	json_decref(o);

	/* re-signing replaces the record and leaves no temporary file */
	assert_int_equal(sign_as(dir, 2, "runtime", 0, "still fine", &err), 0);
	path_in(p, sizeof p, dir, "signoff");
	DIR *d = opendir(p);
	assert_non_null(d);
	int entries = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		entries += e->d_name[0] != '.';
	rewinddir(d);
	int hidden = 0;
	while ((e = readdir(d)))
		hidden += e->d_name[0] == '.' && strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	assert_int_equal(entries, 3);
	assert_int_equal(hidden, 0);
	verify(dir, &res);
	assert_true(res.signed_off);
	assert_string_equal(res.roles[2].detail, "still fine");
	rep_verify_release(&res);
	rm_rf(dir);
}

/* Verifies a packet expected to fail because of one difference line. */
static void expect_difference(const char *dir, const char *line, size_t changed, size_t added,
			      size_t removed)
{
	struct rep_verify_result res;
	verify(dir, &res);
	assert_true(res.manifest_present);
	assert_false(res.manifest_ok);
	assert_false(res.signed_off);
	assert_string_equal(res.differences, line);
	assert_int_equal(res.changed, changed);
	assert_int_equal(res.added, added);
	assert_int_equal(res.removed, removed);
	assert_non_null(strstr(res.summary, "not signed off: MANIFEST does not match the packet"));
	rep_verify_release(&res);
	char *argv[] = {"verify", (char *)dir, NULL};
	assert_int_equal(quiet(cmd_verify, 2, argv), OPR_EXIT_MISMATCH);
}

static void test_tampering_each_file(void **state)
{
	(void)state;
	char dir[256], p[512], line[600];
	snprintf(dir, sizeof dir, "%s/tamper", root);
	make_signed_packet(dir);
	expect_signed_off(dir);

	const char *all[16];
	int n = 0;
	for (int i = 0; packet_files[i]; i++)
		all[n++] = packet_files[i];
	all[n++] = "owners.json";
	for (int i = 0; i < n; i++) {
		size_t len;
		path_in(p, sizeof p, dir, all[i]);
		char *orig = read_bytes(p, &len);
		char *mod = malloc(len);
		assert_non_null(mod);
		memcpy(mod, orig, len);
		/* a flipped byte anywhere */
		size_t at = rnd() % len;
		mod[at] = (char)(mod[at] ^ (char)(1 + rnd() % 255));
		write_bytes(p, mod, len);
		snprintf(line, sizeof line, "changed: %s\n", all[i]);
		expect_difference(dir, line, 1, 0, 0);
		/* the signatures no longer cover the packet either */
		struct rep_verify_result res;
		verify(dir, &res);
		if (strcmp(all[i], "owners.json")) {
			assert_int_equal(res.nroles, 3);
			for (int r = 0; r < 3; r++) {
				assert_int_equal(res.roles[r].state, REP_ROLE_STALE);
				assert_string_equal(rep_role_state_name(res.roles[r].state),
						    "bad signature");
			}
		} else {
			/* the owners may no longer parse at all: never approved */
			for (int r = 0; r < res.nroles; r++)
				assert_int_not_equal(res.roles[r].state, REP_ROLE_APPROVED);
		}
		rep_verify_release(&res);
		/* a truncated file */
		write_bytes(p, orig, len / 2);
		expect_difference(dir, line, 1, 0, 0);
		/* restored: signed off again */
		write_bytes(p, orig, len);
		expect_signed_off(dir);
		free(orig);
		free(mod);
	}

	/* an added file, at the top and deep */
	path_in(p, sizeof p, dir, "run/ops/extra.bin");
	write_bytes(p, "extra", 5);
	expect_difference(dir, "added: run/ops/extra.bin\n", 0, 1, 0);
	unlink(p);
	path_in(p, sizeof p, dir, "zz-notes.txt");
	write_bytes(p, "n", 1);
	expect_difference(dir, "added: zz-notes.txt\n", 0, 1, 0);
	unlink(p);
	expect_signed_off(dir);

	/* a removed file */
	size_t len;
	path_in(p, sizeof p, dir, "run/samples.csv");
	char *orig = read_bytes(p, &len);
	unlink(p);
	expect_difference(dir, "removed: run/samples.csv\n", 0, 0, 1);
	write_bytes(p, orig, len);
	free(orig);
	expect_signed_off(dir);

	/* MANIFEST edited to match a changed file: its digest is no longer the
	 * one the owners signed */
	path_in(p, sizeof p, dir, "packet.md");
	orig = read_bytes(p, &len);
	write_bytes(p, "rewritten", 9);
	char mp[512], *mt = NULL;
	size_t ml;
	struct opr_error err;
	path_in(mp, sizeof mp, dir, "MANIFEST");
	poison_err(&err);
	assert_int_equal(rep_manifest_build(dir, &mt, &ml, NULL, &err), 0);
	char *before = read_bytes(mp, &len);
	write_bytes(mp, mt, ml);
	struct rep_verify_result res;
	verify(dir, &res);
	assert_true(res.manifest_ok);
	assert_false(res.signed_off);
	for (int r = 0; r < 3; r++)
		assert_int_equal(res.roles[r].state, REP_ROLE_STALE);
	rep_verify_release(&res);
	write_bytes(mp, before, len);
	free(mt);
	free(before);
	free(orig);

	/* a symlink in the packet is a mismatch, not a usage error */
	rm_rf(dir);
}

static void test_bad_signatures(void **state)
{
	(void)state;
	char dir[256], other[256], p[512], q[512];
	struct rep_verify_result res;
	struct opr_error err;
	snprintf(dir, sizeof dir, "%s/bad", root);
	snprintf(other, sizeof other, "%s/other", root);
	make_signed_packet(dir);
	make_signed_packet(other);
	expect_signed_off(dir);

	/* signing with the wrong key is refused up front */
	poison_err(&err);
	assert_int_equal(sign_as(dir, 2, "intruder", 0, "", &err), OPR_EUSAGE);
	assert_non_null(strstr(err.msg, "does not belong to role 'runtime-systems-engineer'"));
	poison_err(&err);
	assert_int_equal(sign_as(dir, 2, "kernel", 0, "", &err), OPR_EUSAGE);

	/* a record signed by the wrong key, written by hand */
	char rp[512], text[1024], b64[128];
	size_t len;
	path_in(rp, sizeof rp, dir, "signoff/runtime-systems-engineer.json");
	char *good = read_bytes(rp, &len);
	json_error_t je;
	json_t *rec = json_loadb(good, len, 0, &je);
	assert_non_null(rec);
	snprintf(text, sizeof text, "opreview-signoff v1\nrole=%s\nowner=%s\ndecision=approve\n"
		 "comment=%s\ntime=%s\nmanifest_sha256=%s\n", roles[2], names[2],
		 json_string_value(json_object_get(rec, "comment")),
		 json_string_value(json_object_get(rec, "time")),
		 json_string_value(json_object_get(rec, "manifest_sha256")));
	unsigned char seed[32], pk[32], sk[64], sig[64];
	snprintf(q, sizeof q, "%s/intruder.key", keydir);
	assert_int_equal(rep_key_read_private(q, seed, pk, &err), 0);
	crypto_sign_seed_keypair(pk, sk, seed);
	crypto_sign_detached(sig, NULL, (unsigned char *)text, strlen(text), sk);
	sodium_bin2base64(b64, sizeof b64, sig, 64, sodium_base64_VARIANT_ORIGINAL);
	json_object_set_new(rec, "signature", json_string(b64));
	assert_int_equal(json_dump_file(rec, rp, 0), 0);
	json_decref(rec);
	verify(dir, &res);
	assert_int_equal(res.roles[2].state, REP_ROLE_BAD_SIGNATURE);
	assert_non_null(strstr(res.roles[2].detail, "does not verify with the role's key"));
	assert_int_equal(res.roles[0].state, REP_ROLE_APPROVED);
	assert_false(res.signed_off);
	assert_string_equal(res.summary, "not signed off: runtime-systems-engineer bad signature");
	rep_verify_release(&res);
	write_bytes(rp, good, len);
	expect_signed_off(dir);

	/* a signature copied from another packet signs another manifest */
	path_in(q, sizeof q, other, "signoff/runtime-systems-engineer.json");
	size_t ol;
	char *copied = read_bytes(q, &ol);
	write_bytes(rp, copied, ol);
	free(copied);
	verify(dir, &res);
	assert_true(res.manifest_ok);
	assert_int_equal(res.roles[2].state, REP_ROLE_STALE);
	assert_non_null(strstr(res.roles[2].detail, "it signs manifest"));
	assert_false(res.signed_off);
	rep_verify_release(&res);
	write_bytes(rp, good, len);

	/* a missing role */
	path_in(p, sizeof p, dir, "signoff/kernel-performance-owner.json");
	size_t kl;
	char *kernel = read_bytes(p, &kl);
	unlink(p);
	verify(dir, &res);
	assert_int_equal(res.roles[1].state, REP_ROLE_MISSING);
	assert_false(res.signed_off);
	assert_string_equal(res.summary, "not signed off: kernel-performance-owner missing");
	rep_verify_release(&res);
	char *argv[] = {"verify", dir, NULL};
	assert_int_equal(quiet(cmd_verify, 2, argv), OPR_EXIT_MISMATCH);

	/* swapped records between two roles */
	path_in(q, sizeof q, dir, "signoff/ml-compiler-engineer.json");
	size_t cl;
	char *compiler = read_bytes(q, &cl);
	write_bytes(p, compiler, cl);
	write_bytes(q, kernel, kl);
	verify(dir, &res);
	assert_int_equal(res.roles[0].state, REP_ROLE_BAD_SIGNATURE);
	assert_int_equal(res.roles[1].state, REP_ROLE_BAD_SIGNATURE);
	assert_int_equal(res.roles[2].state, REP_ROLE_APPROVED);
	assert_false(res.signed_off);
	rep_verify_release(&res);
	/* the same with the role field edited to fit the slot: the signature breaks */
	rec = json_loadb(compiler, cl, 0, &je);
	json_object_set_new(rec, "role", json_string(roles[1]));
	json_object_set_new(rec, "owner", json_string(names[1]));
	assert_int_equal(json_dump_file(rec, p, 0), 0);
	json_decref(rec);
	verify(dir, &res);
	assert_int_equal(res.roles[1].state, REP_ROLE_BAD_SIGNATURE);
	assert_non_null(strstr(res.roles[1].detail, "does not verify"));
	rep_verify_release(&res);
	write_bytes(p, kernel, kl);
	write_bytes(q, compiler, cl);
	expect_signed_off(dir);

	/* a malformed record, and a record for a role the packet does not have */
	write_bytes(p, "{\"role\":", 8);
	verify(dir, &res);
	assert_int_equal(res.roles[1].state, REP_ROLE_BAD_SIGNATURE);
	assert_non_null(strstr(res.roles[1].detail, "malformed record"));
	rep_verify_release(&res);
	write_bytes(p, kernel, kl);
	path_in(q, sizeof q, dir, "signoff/release-manager.json");
	write_bytes(q, compiler, cl);
	verify(dir, &res);
	assert_false(res.signed_off);
	assert_string_equal(res.problems, "unexpected entry 'signoff/release-manager.json' (no such role)\n");
	rep_verify_release(&res);
	unlink(q);
	expect_signed_off(dir);

	free(good);
	free(kernel);
	free(compiler);
	sodium_memzero(sk, sizeof sk);
	rm_rf(dir);
	rm_rf(other);
}

static void test_rejection_and_refusals(void **state)
{
	(void)state;
	char dir[256], p[512];
	struct rep_verify_result res;
	struct opr_error err;
	snprintf(dir, sizeof dir, "%s/rej", root);
	make_signed_packet(dir);

	/* a rejection blocks sign-off; approving again lifts it */
	assert_int_equal(sign_as(dir, 2, "runtime", 1, "p99 regressed 12%", &err), 0);
	verify(dir, &res);
	assert_int_equal(res.roles[2].state, REP_ROLE_REJECTED);
	assert_string_equal(res.roles[2].detail, "p99 regressed 12%");
	assert_false(res.signed_off);
	assert_string_equal(res.summary, "not signed off: runtime-systems-engineer rejected");
	rep_verify_release(&res);
	char *argv[] = {"verify", dir, NULL};
	assert_int_equal(quiet(cmd_verify, 2, argv), OPR_EXIT_MISMATCH);
	char key[256];
	snprintf(key, sizeof key, "%s/runtime.key", keydir);
	char *sargv[] = {"sign", dir, "--role", "runtime-systems-engineer", "--key", key, NULL};
	assert_int_equal(quiet(cmd_sign, 6, sargv), OPR_EXIT_OK);
	expect_signed_off(dir);

	/* a role the packet does not have */
	char *bargv[] = {"sign", dir, "--role", "release-manager", "--key", key, NULL};
	assert_int_equal(quiet(cmd_sign, 6, bargv), OPR_EXIT_USAGE);
	struct rep_sign_options o = {"release-manager", key, NULL, 0, 0};
	poison_err(&err);
	assert_int_equal(rep_sign(dir, &o, NULL, &err), OPR_EUSAGE);
	assert_string_equal(err.msg, "role 'release-manager' is not among the packet's owners "
			    "(ml-compiler-engineer, kernel-performance-owner, runtime-systems-engineer)");
	/* a comment that would break the canonical text */
	poison_err(&err);
	assert_int_equal(sign_as(dir, 2, "runtime", 0, "two\nlines", &err), OPR_EUSAGE);
	assert_int_equal(sign_as(dir, 2, "runtime", 0, "bad \xff utf-8", &err), OPR_EUSAGE);
	/* missing options, not a packet */
	char *margv[] = {"sign", dir, "--key", key, NULL};
	assert_int_equal(quiet(cmd_sign, 4, margv), OPR_EXIT_USAGE);
	char *nargv[] = {"verify", keydir, NULL};
	assert_int_equal(quiet(cmd_verify, 2, nargv), OPR_EXIT_USAGE);
	poison_err(&err);
	memset(&res, 0x5A, sizeof res);
	assert_int_equal(rep_verify(keydir, &res, &err), OPR_EINPUT);
	assert_non_null(strstr(err.msg, "has no owners.json"));
	rep_verify_release(&res);
	char *vargv[] = {"verify", NULL};
	assert_int_equal(quiet(cmd_verify, 1, vargv), OPR_EXIT_USAGE);
	char *hargv[] = {"sign", "--help", NULL};
	assert_int_equal(quiet(cmd_sign, 2, hargv), OPR_EXIT_OK);

	/* the packet changed after others signed: nobody may sign it now */
	path_in(p, sizeof p, dir, "packet.html");
	write_bytes(p, "<p>edited</p>", 13);
	poison_err(&err);
	assert_int_equal(sign_as(dir, 0, "compiler", 0, "", &err), OPR_EMISMATCH);
	assert_non_null(strstr(err.msg, "changed: packet.html"));
	assert_int_equal(quiet(cmd_sign, 6, sargv), OPR_EXIT_MISMATCH);

	/* a symlink in the packet makes verify fail as a mismatch */
	path_in(p, sizeof p, dir, "run/link");
	assert_int_equal(symlink("/etc/hostname", p), 0);
	poison_err(&err);
	memset(&res, 0x5A, sizeof res);
	assert_int_equal(rep_verify(dir, &res, &err), OPR_EMISMATCH);
	assert_non_null(strstr(err.msg, "symbolic link"));
	rep_verify_release(&res);
	rm_rf(dir);
}

static void test_owner_without_key(void **state)
{
	(void)state;
	char dir[256], p[512];
	struct col_owner own[2];
	struct rep_verify_result res;
	struct opr_error err;
	snprintf(dir, sizeof dir, "%s/nokey", root);
	assert_int_equal(mkdir(dir, 0755), 0);
	path_in(p, sizeof p, dir, "packet.md");
	write_bytes(p, "# packet\n", 9);
	memset(own, 0, sizeof own);
	snprintf(own[0].role, sizeof own[0].role, "%s", roles[0]);
	snprintf(own[0].name, sizeof own[0].name, "%s", names[0]);
	snprintf(own[0].key, sizeof own[0].key, "%s/compiler.pub", keydir); /* absolute */
	snprintf(own[1].role, sizeof own[1].role, "%s", roles[1]);
	snprintf(own[1].name, sizeof own[1].name, "%s", names[1]);
	snprintf(own[1].key, sizeof own[1].key, "keys/lost.pub");
	poison_err(&err);
	assert_int_equal(rep_owners_write(dir, own, 2, root, &err), 0);
	path_in(p, sizeof p, dir, "owners.json");
	json_error_t je;
	json_t *o = json_load_file(p, 0, &je);
	json_t *e = json_array_get(json_object_get(o, "owners"), 1);
	assert_true(json_is_null(json_object_get(e, "public_key_pem")));
	assert_non_null(strstr(json_string_value(json_object_get(e, "key_error")), "lost.pub"));
	json_decref(o);

	assert_int_equal(sign_as(dir, 0, "compiler", 0, "", &err), 0);
	poison_err(&err);
	assert_int_equal(sign_as(dir, 1, "kernel", 0, "", &err), OPR_EINPUT);
	assert_non_null(strstr(err.msg, "has no public key"));
	/* a record for the keyless role cannot be checked */
	char q[512];
	size_t len;
	path_in(q, sizeof q, dir, "signoff/ml-compiler-engineer.json");
	char *rec = read_bytes(q, &len);
	path_in(p, sizeof p, dir, "signoff/kernel-performance-owner.json");
	write_bytes(p, rec, len);
	free(rec);
	verify(dir, &res);
	assert_int_equal(res.nroles, 2);
	assert_int_equal(res.roles[0].state, REP_ROLE_APPROVED);
	assert_int_equal(res.roles[1].state, REP_ROLE_UNKNOWN_KEY);
	assert_false(res.signed_off);
	assert_string_equal(res.summary, "not signed off: kernel-performance-owner unknown key");
	rep_verify_release(&res);

	/* no owners at all is refused */
	poison_err(&err);
	assert_int_equal(rep_owners_write(dir, own, 0, root, &err), OPR_EINPUT);
	rm_rf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keygen_mode_and_no_overwrite),
		cmocka_unit_test(test_key_parse_rejects),
		cmocka_unit_test(test_openssl_interop),
		cmocka_unit_test(test_manifest_lists_every_file),
		cmocka_unit_test(test_manifest_diff),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_tampering_each_file),
		cmocka_unit_test(test_bad_signatures),
		cmocka_unit_test(test_rejection_and_refusals),
		cmocka_unit_test(test_owner_without_key),
	};
	return cmocka_run_group_tests_name("signoff", tests, setup, teardown);
}
