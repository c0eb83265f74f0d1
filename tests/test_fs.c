/* tests/test_fs.c: the shared output and file layer (opreview_fs.c): paths too
 * long are refused before anything is touched, an output is claimed by one
 * process only, publication never replaces what it must not, SIGTERM undoes
 * an output in progress, input files that are not regular are refused without
 * blocking, and rm -r copes with large and deep trees. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../opreview.h"

static char tmpdir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/opr-fs-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return opr_rmtree(tmpdir);
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static int same_text(const char *path, const char *text)
{
	char buf[256] = {0};
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	return n == strlen(text) && !memcmp(buf, text, n);
}

/* Entries of tmpdir whose name starts with prefix. */
static int count_prefixed(const char *prefix)
{
	DIR *d = opendir(tmpdir);
	struct dirent *e;
	int n = 0;
	assert_non_null(d);
	while ((e = readdir(d)))
		n += !strncmp(e->d_name, prefix, strlen(prefix));
	closedir(d);
	return n;
}

/* ---- paths ---- */

/* A victim file F whose path is 1023 characters: an output "Fs" used to be cut
 * to F by a fixed buffer and F removed. Now refused first, F untouched. */
static void test_long_path_victim(void **state)
{
	(void)state;
	char dir[1100], victim[1100], out[1100];
	struct opr_error err = {0};
	snprintf(dir, sizeof dir, "%s", tmpdir);
	for (int i = 0; i < 4; i++) {
		size_t n = strlen(dir);
		dir[n] = '/';
		memset(dir + n + 1, 'd', 200);
		dir[n + 201] = '\0';
		assert_int_equal(mkdir(dir, 0777), 0);
	}
	size_t n = strlen(dir);
	snprintf(victim, sizeof victim, "%s/", dir);
	memset(victim + n + 1, 'f', 1023 - n - 1);
	victim[1023] = '\0';
	put(victim, "the user's file\n");
	snprintf(out, sizeof out, "%ss", victim);
	struct opr_output o;
	assert_int_equal(opr_output_claim(&o, out, OPR_OUT_DIR, NULL, 1, &err), OPR_EUSAGE);
	assert_non_null(strstr(err.msg, "path too long"));
	assert_non_null(strstr(err.msg, "is 1024 characters; the limit is 400"));
	assert_true(strlen(err.msg) < 300); /* the path is not printed whole */
	opr_output_release(&o);
	assert_true(same_text(victim, "the user's file\n"));
	/* a long last component too (.tmp-PID must still fit NAME_MAX) */
	char name[300];
	memset(name, 'n', 250);
	name[250] = '\0';
	assert_int_equal(opr_path_check(name, "--out", &err), OPR_EUSAGE);
	assert_non_null(strstr(err.msg, "--out: file name too long"));
	assert_int_equal(opr_path_check("out/packet", "--out", &err), 0);
	assert_int_equal(opr_path_check("", "--out", &err), OPR_EUSAGE);
	/* a join that does not fit is an error, never a cut */
	char small[16];
	assert_int_equal(opr_path_join(small, sizeof small, "abcdefgh", "ijklmnop", &err), OPR_EUSAGE);
	assert_int_equal(opr_path_join(small, sizeof small, "abc", "def", &err), 0);
	assert_string_equal(small, "abc/def");
}

/* The option parser checks every path option and positional argument. */
static void test_parser_checks_paths(void **state)
{
	(void)state;
	const char *out = NULL;
	const struct opr_option opts[] = {
		{OPR_OPT_PATH, "out", "DIR", "d", &out},
		{OPR_OPT_END, NULL, NULL, NULL, NULL}};
	const struct opr_command_help h = {"x", "x", "x", NULL, opts};
	char longp[600];
	memset(longp, 'p', sizeof longp - 1);
	longp[sizeof longp - 1] = '\0';
	longp[100] = '/';
	char *argv1[] = {"x", "--out", longp, NULL};
	const char *pos[1];
	int npos;
	struct opr_error err = {0};
	assert_int_equal(opr_parse(&h, 3, argv1, pos, 1, &npos, &err), OPR_EUSAGE);
	assert_non_null(strstr(err.msg, "x --out: path too long"));
	char *argv2[] = {"x", longp, NULL};
	assert_int_equal(opr_parse(&h, 2, argv2, pos, 1, &npos, &err), OPR_EUSAGE);
	assert_non_null(strstr(err.msg, "path too long"));
	char *argv3[] = {"x", "--out", "short", "run", NULL};
	assert_int_equal(opr_parse(&h, 4, argv3, pos, 1, &npos, &err), 0);
	assert_string_equal(out, "short");
}

/* ---- claims ---- */

static void test_one_claim_wins(void **state)
{
	(void)state;
	char target[128], lock[160];
	struct opr_error err = {0};
	snprintf(target, sizeof target, "%s/race", tmpdir);
	snprintf(lock, sizeof lock, "%s.opreview-lock", target);
	struct opr_output a, b;
	assert_int_equal(opr_output_claim(&a, target, OPR_OUT_DIR, NULL, 0, &err), 0);
	/* a second claim (another open file description: as another process) */
	assert_int_equal(opr_output_claim(&b, target, OPR_OUT_DIR, NULL, 1, &err), OPR_EEXIST);
	assert_non_null(strstr(err.msg, "race' is being written by another opreview"));
	opr_output_release(&b);
	assert_int_equal(access(lock, F_OK), 0); /* the loser left a's lock alone */
	assert_int_equal(opr_output_open(&a, &err), 0);
	assert_int_equal(mkdir(a.tmp, 0777), 0);
	assert_int_equal(opr_output_publish(&a, &err), 0);
	opr_output_release(&a);
	assert_int_not_equal(access(lock, F_OK), 0);
	/* now it exists: refused without force */
	assert_int_equal(opr_output_claim(&b, target, OPR_OUT_DIR, NULL, 0, &err), OPR_EEXIST);
	assert_non_null(strstr(err.msg, "exists; pass --force"));
	opr_output_release(&b);
	assert_int_equal(count_prefixed("race."), 0);
}

/* Many processes claiming one target at once: exactly one holds it, whatever
 * the interleaving of creating, locking and releasing the lock file. */
static void test_claim_race_processes(void **state)
{
	(void)state;
	char target[128];
	snprintf(target, sizeof target, "%s/crowd", tmpdir);
	for (int round = 0; round < 20; round++) {
		int p[2], go[2];
		assert_int_equal(pipe(p), 0);
		assert_int_equal(pipe(go), 0);
		pid_t kids[8];
		for (int k = 0; k < 8; k++) {
			kids[k] = fork();
			assert_true(kids[k] >= 0);
			if (kids[k] == 0) {
				struct opr_error err = {0};
				struct opr_output o;
				close(p[0]);
				close(go[1]);
				int rc = opr_output_claim(&o, target, OPR_OUT_FILE, NULL, 1, &err);
				char c = rc == 0 ? 'W' : rc == OPR_EEXIST ? 'L' : 'E';
				if (write(p[1], &c, 1) != 1)
					_exit(2);
				/* a winner holds it until every other has tried */
				if (!rc && read(go[0], &c, 1) < 0)
					_exit(3);
				opr_output_release(&o);
				_exit(0);
			}
		}
		close(p[1]);
		close(go[0]);
		int w = 0, l = 0, e = 0;
		char c;
		for (int k = 0; k < 8 && read(p[0], &c, 1) == 1; k++)
			w += c == 'W', l += c == 'L', e += c == 'E';
		close(go[1]); /* the winner may go */
		close(p[0]);
		for (int k = 0; k < 8; k++)
			waitpid(kids[k], NULL, 0);
		assert_int_equal(e, 0);
		assert_int_equal(w + l, 8);
		assert_int_equal(w, 1);
		assert_int_equal(count_prefixed("crowd"), 0);
	}
}

/* Something that appears at the target while the output is built is kept:
 * the publishing rename does not replace it. */
static void test_publish_never_replaces(void **state)
{
	(void)state;
	char target[128], keep[160];
	struct opr_error err = {0};
	snprintf(target, sizeof target, "%s/late", tmpdir);
	snprintf(keep, sizeof keep, "%s/keep.txt", target);
	struct opr_output o;
	assert_int_equal(opr_output_claim(&o, target, OPR_OUT_DIR, NULL, 0, &err), 0);
	assert_int_equal(opr_output_open(&o, &err), 0);
	assert_int_equal(mkdir(o.tmp, 0777), 0);
	assert_int_equal(mkdir(target, 0777), 0); /* an empty folder: rename(2) would replace it */
	put(keep, "mine\n");
	assert_int_equal(opr_output_publish(&o, &err), OPR_EEXIST);
	opr_output_release(&o);
	assert_true(same_text(keep, "mine\n"));
	assert_int_equal(count_prefixed("late."), 0);
}

/* --force replaces an output of the same kind only, never a user's folder or
 * a file of another kind. */
static void test_force_replaces_only_outputs(void **state)
{
	(void)state;
	char target[128], path[160];
	struct opr_error err = {0};
	struct opr_output o;
	snprintf(target, sizeof target, "%s/home", tmpdir);
	snprintf(path, sizeof path, "%s/thesis.tex", target);
	assert_int_equal(mkdir(target, 0777), 0);
	put(path, "years of work\n");
	assert_int_equal(opr_output_claim(&o, target, OPR_OUT_DIR, "findings.json", 1, &err), OPR_EEXIST);
	assert_non_null(strstr(err.msg, "not an opreview output (no findings.json)"));
	opr_output_release(&o);
	assert_true(same_text(path, "years of work\n"));
	/* a file where a folder is wanted, and the other way round */
	snprintf(target, sizeof target, "%s/afile", tmpdir);
	put(target, "x\n");
	assert_int_equal(opr_output_claim(&o, target, OPR_OUT_DIR, NULL, 1, &err), OPR_EEXIST);
	opr_output_release(&o);
	snprintf(target, sizeof target, "%s/home", tmpdir);
	assert_int_equal(opr_output_claim(&o, target, OPR_OUT_FILE, NULL, 1, &err), OPR_EEXIST);
	opr_output_release(&o);
	/* a packet folder is replaced whole */
	snprintf(target, sizeof target, "%s/packet", tmpdir);
	snprintf(path, sizeof path, "%s/findings.json", target);
	assert_int_equal(mkdir(target, 0777), 0);
	put(path, "old\n");
	assert_int_equal(opr_output_claim(&o, target, OPR_OUT_DIR, "findings.json", 1, &err), 0);
	assert_int_equal(opr_output_open(&o, &err), 0);
	assert_int_equal(mkdir(o.tmp, 0777), 0);
	snprintf(path, sizeof path, "%s/findings.json", o.tmp);
	put(path, "new\n");
	assert_int_equal(opr_output_publish(&o, &err), 0);
	opr_output_release(&o);
	snprintf(path, sizeof path, "%s/findings.json", target);
	assert_true(same_text(path, "new\n"));
	assert_int_equal(count_prefixed("packet."), 0);
}

/* A lock left by a killed process is taken over; a file of that name that is
 * not opreview's is neither used nor removed. */
static void test_stale_and_foreign_locks(void **state)
{
	(void)state;
	char target[128], lock[160];
	struct opr_error err = {0};
	struct opr_output o;
	snprintf(target, sizeof target, "%s/stale", tmpdir);
	snprintf(lock, sizeof lock, "%s.opreview-lock", target);
	put(lock, "opreview output lock\n");
	assert_int_equal(opr_output_claim(&o, target, OPR_OUT_FILE, NULL, 0, &err), 0);
	opr_output_release(&o);
	assert_int_not_equal(access(lock, F_OK), 0);
	put(lock, "someone's notes\n");
	assert_int_equal(opr_output_claim(&o, target, OPR_OUT_FILE, NULL, 0, &err), OPR_EEXIST);
	assert_non_null(strstr(err.msg, "is not opreview's lock"));
	opr_output_release(&o);
	assert_true(same_text(lock, "someone's notes\n"));
}

/* SIGTERM while an output is being written: the temporary output and the
 * lock are gone and the exit status is 143 (SIGINT: 130). */
static void test_signal_undoes_output(void **state)
{
	(void)state;
	static const int sigs[2] = {SIGTERM, SIGINT};
	for (int i = 0; i < 2; i++) {
		char target[128];
		snprintf(target, sizeof target, "%s/sig%d", tmpdir, i);
		int ready[2];
		assert_int_equal(pipe(ready), 0);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			struct opr_error err = {0};
			struct opr_output o;
			char path[256];
			close(ready[0]);
			if (opr_output_claim(&o, target, OPR_OUT_DIR, NULL, 0, &err) ||
			    opr_output_open(&o, &err) || mkdir(o.tmp, 0777))
				_exit(99);
			for (int k = 0; k < 50; k++) {
				snprintf(path, sizeof path, "%s/part-%d", o.tmp, k);
				put(path, "half a packet\n");
			}
			if (write(ready[1], "r", 1) != 1)
				_exit(98);
			for (;;)
				pause();
		}
		close(ready[1]);
		char c;
		assert_int_equal(read(ready[0], &c, 1), 1);
		close(ready[0]);
		char prefix[32];
		snprintf(prefix, sizeof prefix, "sig%d.", i);
		assert_int_equal(count_prefixed(prefix), 2); /* tmp-PID and the lock */
		assert_int_equal(kill(pid, sigs[i]), 0);
		int status;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 128 + sigs[i]);
		assert_int_equal(count_prefixed(prefix), 0);
		assert_int_not_equal(access(target, F_OK), 0);
	}
}

/* ---- input files ---- */

static void test_fifo_refused_without_blocking(void **state)
{
	(void)state;
	char fifo[128];
	struct opr_error err = {0};
	snprintf(fifo, sizeof fifo, "%s/profile.yaml", tmpdir);
	assert_int_equal(mkfifo(fifo, 0644), 0);
	int fd = -1;
	time_t t0 = time(NULL);
	alarm(10); /* a regression blocks in open(): fail rather than hang */
	assert_int_equal(opr_open_regular(fifo, &fd, &err), OPR_EINPUT);
	alarm(0);
	assert_true(time(NULL) - t0 < 5);
	assert_non_null(strstr(err.msg, "it is a FIFO, not a regular file"));
	assert_int_equal(opr_open_regular(tmpdir, &fd, &err), OPR_EINPUT);
	assert_non_null(strstr(err.msg, "a directory"));
	assert_int_equal(opr_open_regular("/dev/null", &fd, &err), OPR_EINPUT);
	assert_non_null(strstr(err.msg, "a character device"));
	char reg[128];
	snprintf(reg, sizeof reg, "%s/regular", tmpdir);
	put(reg, "x\n");
	assert_int_equal(opr_open_regular(reg, &fd, &err), 0);
	char b[4];
	assert_int_equal(read(fd, b, sizeof b), 2); /* blocking mode again */
	assert_int_equal(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	close(fd);
}

/* ---- rm -r ---- */

static void test_rmtree_large_and_deep(void **state)
{
	(void)state;
	char root[128], path[512];
	snprintf(root, sizeof root, "%s/tree", tmpdir);
	assert_int_equal(mkdir(root, 0777), 0);
	/* more entries than one getdents64 buffer holds */
	for (int i = 0; i < 400; i++) {
		snprintf(path, sizeof path, "%s/file-with-a-longish-name-%04d", root, i);
		put(path, "x");
	}
	snprintf(path, sizeof path, "%s", root);
	for (int d = 0; d < 12; d++) {
		size_t n = strlen(path);
		snprintf(path + n, sizeof path - n, "/d%d", d);
		assert_int_equal(mkdir(path, 0777), 0);
	}
	char link[160];
	snprintf(link, sizeof link, "%s/link", root);
	assert_int_equal(symlink(tmpdir, link), 0); /* not followed */
	assert_int_equal(opr_rmtree(root), 0);
	assert_int_not_equal(access(root, F_OK), 0);
	assert_int_equal(access(tmpdir, F_OK), 0);
	assert_int_equal(opr_rmtree(root), 0); /* missing: fine */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_long_path_victim),
		cmocka_unit_test(test_parser_checks_paths),
		cmocka_unit_test(test_one_claim_wins),
		cmocka_unit_test(test_claim_race_processes),
		cmocka_unit_test(test_publish_never_replaces),
		cmocka_unit_test(test_force_replaces_only_outputs),
		cmocka_unit_test(test_stale_and_foreign_locks),
		cmocka_unit_test(test_signal_undoes_output),
		cmocka_unit_test(test_fifo_refused_without_blocking),
		cmocka_unit_test(test_rmtree_large_and_deep),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
