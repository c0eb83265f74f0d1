/* opreview_fs.c: the one way a command takes its output (a packet or archive
 * directory, a findings or envelope file): claimed under a lock beside it, built
 * in OUT.tmp-PID, published by one rename that never replaces what it must not,
 * and removed on SIGINT/SIGTERM. Also the checks every command shares on paths
 * (length) and on input files (regular files only, opened without blocking). */
#include "opreview.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- paths ------------------------------------------------------------------ */

int opr_path_check(const char *path, const char *what, struct opr_error *err)
{
	size_t n = strlen(path);
	if (!n)
		return opr_error_set(err, OPR_EUSAGE, "%s: the path is empty", what);
	if (n > OPR_PATH_USER_MAX)
		/* the path itself may be kilobytes: show its two ends only */
		return opr_error_set(err, OPR_EUSAGE,
				     "%s: path too long: '%.40s...%s' is %zu characters; the limit is %d",
				     what, path, path + n - 40, n, OPR_PATH_USER_MAX);
	/* the last component gets ".tmp-PID" or ".opreview-lock" appended */
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (strlen(base) > OPR_NAME_USER_MAX)
		return opr_error_set(err, OPR_EUSAGE,
				     "%s: file name too long: '%.40s...' is %zu characters; the limit is %d",
				     what, base, strlen(base), OPR_NAME_USER_MAX);
	return 0;
}

int opr_path_join(char *buf, size_t size, const char *dir, const char *name,
		  struct opr_error *err)
{
	int n = snprintf(buf, size, "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= size)
		return opr_error_set(err, OPR_EUSAGE, "path too long: '%.40s.../%s'", dir, name);
	return 0;
}

/* ---- input files ------------------------------------------------------------ */

static const char *kind_of(mode_t m)
{
	return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket"
	       : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device" : "not a regular file";
}

int opr_open_regular(const char *path, int *fd, struct opr_error *err)
{
	/* O_NONBLOCK: opening a FIFO without a writer must not wait for one */
	int f = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (f < 0)
		return opr_error_set(err, errno == EIO || errno == ENOMEM ? OPR_EIO : OPR_EINPUT,
				     "cannot read '%s': %s", path, strerror(errno));
	struct stat st;
	if (fstat(f, &st)) {
		int e = errno;
		close(f);
		return opr_error_set(err, OPR_EIO, "cannot read '%s': %s", path, strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(f);
		return opr_error_set(err, OPR_EINPUT, "cannot read '%s': it is %s, not a regular file",
				     path, kind_of(st.st_mode));
	}
	int fl = fcntl(f, F_GETFL);
	if (fl < 0 || fcntl(f, F_SETFL, fl & ~O_NONBLOCK)) {
		int e = errno;
		close(f);
		return opr_error_set(err, OPR_EIO, "cannot read '%s': %s", path, strerror(e));
	}
	*fd = f;
	return 0;
}

/* ---- directories ------------------------------------------------------------ */

int opr_mkdirs(const char *path, struct opr_error *err)
{
	char buf[OPR_PATH_MAX];
	if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
		return opr_error_set(err, OPR_EUSAGE, "path too long: '%.40s...'", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0777) && errno != EEXIST)
			return opr_error_set(err, OPR_EIO, "cannot create '%s': %s", buf, strerror(errno));
		*p = '/';
	}
	if (mkdir(buf, 0777) && errno != EEXIST)
		return opr_error_set(err, OPR_EIO, "cannot create '%s': %s", buf, strerror(errno));
	return 0;
}

struct linux_dirent64 {
	unsigned long long d_ino;
	long long d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* Empties the directory open as fd, depth-first, with system calls only: no
 * allocation and no path buffers, so it runs inside a signal handler and on
 * trees of any depth. Returns 0 or -1. */
static int empty_dir(int fd, int depth)
{
	char buf[4096] __attribute__((aligned(8)));
	int rc = 0;
	if (depth > 64)
		return -1;
	for (;;) {
		long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		int removed = 0;
		for (long off = 0; off < n;) {
			struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
			off += d->d_reclen;
			const char *nm = d->d_name;
			if (!strcmp(nm, ".") || !strcmp(nm, ".."))
				continue;
			if (!unlinkat(fd, nm, 0)) {
				removed++;
				continue;
			}
			if (errno != EISDIR && errno != EPERM) {
				rc = -1;
				continue;
			}
			int sub = openat(fd, nm, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0 || empty_dir(sub, depth + 1))
				rc = -1;
			if (sub >= 0)
				close(sub);
			if (unlinkat(fd, nm, AT_REMOVEDIR))
				rc = -1;
			else
				removed++;
		}
		/* entries went away under the cursor: read from the start again */
		if (removed && lseek(fd, 0, SEEK_SET) < 0)
			return -1;
		if (!removed)
			break;
	}
	return rc;
}

int opr_rmtree(const char *path)
{
	struct stat st;
	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlink(path);
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int rc = empty_dir(fd, 0);
	close(fd);
	if (rmdir(path))
		rc = -1;
	return rc;
}

int opr_fsync_dir(const char *dir, struct opr_error *err)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return opr_error_set(err, OPR_EIO, "cannot open '%s': %s", dir, strerror(errno));
	int rc = fsync(fd);
	close(fd);
	if (rc)
		return opr_error_set(err, OPR_EIO, "cannot sync '%s': %s", dir, strerror(errno));
	return 0;
}

/* Splits target into its parent folder and last component. */
static void split_path(const char *target, char *parent, size_t plen, const char **base)
{
	const char *slash = strrchr(target, '/');
	if (!slash) {
		snprintf(parent, plen, ".");
		*base = target;
	} else if (slash == target) {
		snprintf(parent, plen, "/");
		*base = slash + 1;
	} else {
		snprintf(parent, plen, "%.*s", (int)(slash - target), target);
		*base = slash + 1;
	}
}

/* True when name is "<base>.<tag>-<pid>" for a process that no longer runs. */
static int stale_sibling(const char *name, const char *base, const char *tag)
{
	size_t bl = strlen(base), tl = strlen(tag);
	if (strncmp(name, base, bl) || name[bl] != '.' || strncmp(name + bl + 1, tag, tl) ||
	    name[bl + 1 + tl] != '-')
		return 0;
	char *end;
	long pid = strtol(name + bl + 2 + tl, &end, 10);
	if (*end || pid <= 0)
		return 0;
	return pid != (long)getpid() && kill((pid_t)pid, 0) && errno == ESRCH;
}

int opr_clean_stale(const char *target)
{
	char parent[OPR_PATH_MAX];
	const char *base;
	split_path(target, parent, sizeof parent, &base);
	if (!base[0])
		return 0;
	DIR *d = opendir(parent);
	if (!d)
		return 0;
	struct dirent *e;
	int removed = 0;
	struct stat st;
	while ((e = readdir(d))) {
		char path[OPR_PATH_MAX + 256];
		if (snprintf(path, sizeof path, "%s/%s", parent, e->d_name) >= (int)sizeof path)
			continue;
		if (stale_sibling(e->d_name, base, "tmp") || stale_sibling(e->d_name, base, "lock")) {
			opr_rmtree(path);
			removed++;
		} else if (stale_sibling(e->d_name, base, "old")) {
			/* killed between moving the old one aside and the new one in:
			 * put the old one back rather than lose it */
			if (stat(target, &st) && !rename(path, target))
				removed++;
			else if (!opr_rmtree(path))
				removed++;
		}
	}
	closedir(d);
	return removed;
}

/* ---- outputs ---------------------------------------------------------------- */

#define LOCK_TAG "opreview-lock"
#define LOCK_TEXT "opreview output lock\n"
#define MAX_ACTIVE 4

/* The outputs a signal handler must undo; written only with signals blocked. */
static struct opr_output *volatile active[MAX_ACTIVE];

static void write_str(const char *s)
{
	ssize_t r = write(2, s, strlen(s));
	(void)r;
}

/* SIGINT/SIGTERM: undo every output in progress (async-signal-safe calls only),
 * say so on one line, and exit 128 + the signal (130, 143). */
static void on_signal(int sig)
{
	for (int i = 0; i < MAX_ACTIVE; i++) {
		struct opr_output *o = active[i];
		if (!o)
			continue;
		if (o->tmp_made && !o->published)
			opr_rmtree(o->tmp);
		if (o->old_made) {
			struct stat st;
			if (stat(o->target, &st))
				rename(o->old, o->target);
		}
		if (o->lock_fd >= 0)
			unlink(o->lock);
	}
	int in_place = 0;
	for (int i = 0; i < MAX_ACTIVE; i++)
		in_place |= active[i] && active[i]->published;
	write_str(sig == SIGINT ? "opreview: interrupted (SIGINT)" : "opreview: terminated (SIGTERM)");
	write_str(in_place ? "; the output was already in place\n" : "; nothing was written\n");
	_exit(128 + sig);
}

static void set_active(struct opr_output *o, int on)
{
	sigset_t all, old;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	int n = 0;
	for (int i = 0; i < MAX_ACTIVE; i++) {
		if (on && !active[i]) {
			active[i] = o;
			on = 0;
		} else if (!on && active[i] == o) {
			active[i] = NULL;
		}
		n += active[i] != NULL;
	}
	/* the handler is there exactly while an output is in progress (even
	 * where the caller ignored SIGINT, as sh does for a job started with &:
	 * an output in progress is always undone); then what was there before */
	static struct sigaction saved_int, saved_term;
	static int installed;
	if (n && !installed) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_signal;
		sigfillset(&sa.sa_mask);
		sigaction(SIGINT, &sa, &saved_int);
		sigaction(SIGTERM, &sa, &saved_term);
		installed = 1;
	} else if (!n && installed) {
		sigaction(SIGINT, &saved_int, NULL);
		sigaction(SIGTERM, &saved_term, NULL);
		installed = 0;
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
}

static int exists_error(const struct opr_output *o, struct opr_error *err)
{
	return opr_error_set(err, OPR_EEXIST, "'%s' exists; pass --force to replace it", o->target);
}

/* With --force, a directory is replaced only when it is one this tool would
 * write (it holds o->marker) or is empty: a mistyped --out never deletes a
 * user's folder. A file is replaced only by a file. */
static int replaceable(const struct opr_output *o, const struct stat *st, struct opr_error *err)
{
	if (o->kind == OPR_OUT_FILE) {
		if (!S_ISREG(st->st_mode))
			return opr_error_set(err, OPR_EEXIST, "'%s' exists and is %s; refusing to replace it",
					     o->target, kind_of(st->st_mode));
		return 0;
	}
	if (!S_ISDIR(st->st_mode))
		return opr_error_set(err, OPR_EEXIST, "'%s' exists and is %s; refusing to replace it",
				     o->target, S_ISREG(st->st_mode) ? "a file" : kind_of(st->st_mode));
	char m[OPR_PATH_MAX + 64];
	snprintf(m, sizeof m, "%s/%s", o->target, o->marker ? o->marker : "");
	if (o->marker && !access(m, F_OK))
		return 0;
	DIR *d = opendir(o->target);
	int empty = 1;
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			empty = 0;
	if (d)
		closedir(d);
	if (!empty)
		return opr_error_set(err, OPR_EEXIST,
				     "'%s' exists and is not an opreview output (no %s); refusing to replace it",
				     o->target, o->marker ? o->marker : "marker");
	return 0;
}

/* Checks the target against --force: absent, or present and replaceable. */
static int check_target(const struct opr_output *o, struct opr_error *err)
{
	struct stat st;
	if (lstat(o->target, &st))
		return errno == ENOENT ? 0
				       : opr_error_set(err, OPR_EIO, "cannot check '%s': %s", o->target,
						       strerror(errno));
	if (!o->force)
		return exists_error(o, err);
	return replaceable(o, &st, err);
}

/* Takes the lock file beside the target. A new lock is made whole under a
 * name of its own (TARGET.lock-PID: written, flock'ed) and then linked into
 * place, so no one ever sees it empty or unlocked. An existing one whose
 * holder died (flock is released with the process) is taken over; the inode
 * check after flock makes a lock its releaser unlinked meanwhile count as
 * lost. */
static int take_lock(struct opr_output *o, struct opr_error *err)
{
	char mine[OPR_PATH_MAX + 32];
	snprintf(mine, sizeof mine, "%s.lock-%ld", o->target, (long)getpid());
	for (int tries = 0; tries < 8; tries++) {
		unlink(mine);
		int fd = open(mine, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0)
			return opr_error_set(err, OPR_EIO, "cannot create '%s': %s", mine, strerror(errno));
		if (write(fd, LOCK_TEXT, sizeof LOCK_TEXT - 1) != (ssize_t)(sizeof LOCK_TEXT - 1) ||
		    flock(fd, LOCK_EX | LOCK_NB)) {
			int e = errno;
			close(fd);
			unlink(mine);
			return opr_error_set(err, OPR_EIO, "cannot write '%s': %s", mine, strerror(e));
		}
		int linked = !link(mine, o->lock);
		int e = errno;
		unlink(mine);
		if (linked) {
			o->lock_fd = fd;
			return 0;
		}
		close(fd);
		if (e != EEXIST)
			return opr_error_set(err, OPR_EIO, "cannot create '%s': %s", o->lock, strerror(e));
		fd = open(o->lock, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT)
			continue; /* released meanwhile */
		if (fd < 0)
			return opr_error_set(err, OPR_EIO, "cannot open '%s': %s", o->lock, strerror(errno));
		if (flock(fd, LOCK_EX | LOCK_NB)) {
			e = errno;
			close(fd);
			if (e == EWOULDBLOCK)
				return opr_error_set(err, OPR_EEXIST,
						     "'%s' is being written by another opreview; "
						     "wait for it or choose another output", o->target);
			return opr_error_set(err, OPR_EIO, "cannot lock '%s': %s", o->lock, strerror(e));
		}
		struct stat a, b;
		if (fstat(fd, &a) || stat(o->lock, &b) || a.st_ino != b.st_ino || a.st_dev != b.st_dev) {
			close(fd);
			continue;
		}
		/* a stale lock: never take over (and later remove) a file not ours */
		char text[sizeof LOCK_TEXT];
		ssize_t r = pread(fd, text, sizeof text - 1, 0);
		if (!S_ISREG(a.st_mode) || r != (ssize_t)(sizeof LOCK_TEXT - 1) ||
		    memcmp(text, LOCK_TEXT, sizeof LOCK_TEXT - 1)) {
			close(fd);
			return opr_error_set(err, OPR_EEXIST,
					     "'%s' exists and is not opreview's lock; refusing to use it", o->lock);
		}
		o->lock_fd = fd;
		return 0;
	}
	return opr_error_set(err, OPR_EEXIST, "'%s' is being written by another opreview", o->target);
}

int opr_output_claim(struct opr_output *o, const char *target, enum opr_output_kind kind,
		     const char *marker, int force, struct opr_error *err)
{
	memset(o, 0, sizeof *o);
	o->lock_fd = -1;
	o->kind = kind;
	o->marker = marker;
	o->force = force;
	int rc = opr_path_check(target, "output", err);
	if (rc)
		return rc;
	long pid = (long)getpid();
	/* cannot truncate: target is at most OPR_PATH_USER_MAX characters */
	snprintf(o->target, sizeof o->target, "%s", target);
	snprintf(o->tmp, sizeof o->tmp, "%s.tmp-%ld", target, pid);
	snprintf(o->old, sizeof o->old, "%s.old-%ld", target, pid);
	snprintf(o->lock, sizeof o->lock, "%s.%s", target, LOCK_TAG);
	const char *base;
	split_path(target, o->parent, sizeof o->parent, &base);
	opr_clean_stale(target);
	if ((rc = check_target(o, err)))
		return rc;
	set_active(o, 1);
	/* a parent that is not there yet is made only when the output is
	 * written: a bad profile leaves no folder behind */
	struct stat st;
	if (!stat(o->parent, &st) && (rc = take_lock(o, err))) {
		set_active(o, 0);
		return rc;
	}
	return o->lock_fd >= 0 ? check_target(o, err) : 0;
}

int opr_output_open(struct opr_output *o, struct opr_error *err)
{
	int rc;
	if (o->lock_fd < 0) {
		if ((rc = opr_mkdirs(o->parent, err)) || (rc = take_lock(o, err)) ||
		    (rc = check_target(o, err)))
			return rc;
	}
	/* ours (this pid) if anything: from an earlier output of this process */
	opr_rmtree(o->tmp);
	o->tmp_made = 1;
	return 0;
}

int opr_output_publish(struct opr_output *o, struct opr_error *err)
{
	int rc = check_target(o, err);
	if (rc)
		return rc;
	struct stat st;
	int had_old = !lstat(o->target, &st);
	if (!had_old) {
		/* RENAME_NOREPLACE: whatever appeared meanwhile is kept */
		if (!renameat2(AT_FDCWD, o->tmp, AT_FDCWD, o->target, RENAME_NOREPLACE))
			goto done;
		if (errno == EEXIST)
			return exists_error(o, err);
		if (errno != EINVAL && errno != ENOSYS)
			return opr_error_set(err, OPR_EIO, "cannot rename into '%s': %s", o->target,
					     strerror(errno));
		/* a file system without RENAME_NOREPLACE: the lock still keeps
		 * other opreview processes out */
		if (!rename(o->tmp, o->target))
			goto done;
		return opr_error_set(err, OPR_EIO, "cannot rename into '%s': %s", o->target, strerror(errno));
	}
	if (o->kind == OPR_OUT_FILE) {
		if (rename(o->tmp, o->target))
			return opr_error_set(err, OPR_EIO, "cannot rename into '%s': %s", o->target,
					     strerror(errno));
		goto done;
	}
	/* a directory: move the old one aside, the new one in, then drop the old */
	if (rename(o->target, o->old))
		return opr_error_set(err, OPR_EIO, "cannot move '%s' aside: %s", o->target, strerror(errno));
	o->old_made = 1;
	if (rename(o->tmp, o->target)) {
		int e = errno;
		if (!rename(o->old, o->target))
			o->old_made = 0;
		return opr_error_set(err, OPR_EIO, "cannot rename into '%s': %s", o->target, strerror(e));
	}
done:
	o->published = 1;
	if (o->old_made) {
		opr_rmtree(o->old);
		o->old_made = 0;
	}
	return opr_fsync_dir(o->parent, err);
}

/* Replaces each o->tmp in s by o->target, in place (the target is shorter). */
static void say_target(const struct opr_output *o, char *s)
{
	size_t tl = strlen(o->tmp), gl = strlen(o->target);
	char *at;
	while (tl && (at = strstr(s, o->tmp))) {
		memmove(at + gl, at + tl, strlen(at + tl) + 1);
		memcpy(at, o->target, gl);
		s = at + gl;
	}
}

void opr_output_name(const struct opr_output *o, struct opr_error *err)
{
	if (!o || !err || !o->tmp[0])
		return;
	say_target(o, err->msg);
	say_target(o, err->file);
}

void opr_output_release(struct opr_output *o)
{
	if (!o)
		return;
	if (o->tmp_made && !o->published)
		opr_rmtree(o->tmp);
	o->tmp_made = 0;
	if (o->lock_fd >= 0) {
		/* unlink while holding it: a waiter that opened this inode sees
		 * it gone (take_lock's inode check) */
		unlink(o->lock);
		close(o->lock_fd);
		o->lock_fd = -1;
	}
	set_active(o, 0);
}

/* ---- whole files ---- */

int opr_write_fd(int fd, const void *data, size_t len, const char *path, struct opr_error *err)
{
	const char *p = data;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return opr_error_set(err, OPR_EIO, "cannot write '%s': %s", path,
					     strerror(w < 0 ? errno : ENOSPC));
		p += w;
		len -= (size_t)w;
	}
	if (fsync(fd))
		return opr_error_set(err, OPR_EIO, "cannot sync '%s': %s", path, strerror(errno));
	return 0;
}

int opr_write_file(const char *path, const void *data, size_t len, struct opr_error *err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return opr_error_set(err, OPR_EIO, "cannot write '%s': %s", path, strerror(errno));
	int rc = opr_write_fd(fd, data, len, path, err);
	if (rc) {
		close(fd);
		return rc;
	}
	if (close(fd))
		return opr_error_set(err, OPR_EIO, "cannot close '%s': %s", path, strerror(errno));
	return 0;
}

int opr_replace_file(const char *dir, const char *name, const void *data, size_t len,
		     struct opr_error *err)
{
	char tmp[OPR_PATH_MAX], final[OPR_PATH_MAX];
	if (snprintf(tmp, sizeof tmp, "%s/.%s.tmp-XXXXXX", dir, name) >= (int)sizeof tmp ||
	    snprintf(final, sizeof final, "%s/%s", dir, name) >= (int)sizeof final)
		return opr_error_set(err, OPR_EIO, "path too long: '%s/%s'", dir, name);
	int fd = mkstemp(tmp), rc = 0;
	if (fd < 0)
		return opr_error_set(err, OPR_EIO, "cannot create a file in '%s': %s", dir,
				     strerror(errno));
	if (fchmod(fd, 0644))
		rc = opr_error_set(err, OPR_EIO, "cannot chmod '%s': %s", tmp, strerror(errno));
	if (!rc)
		rc = opr_write_fd(fd, data, len, tmp, err);
	if (close(fd) && !rc)
		rc = opr_error_set(err, OPR_EIO, "cannot close '%s': %s", tmp, strerror(errno));
	if (!rc && rename(tmp, final))
		rc = opr_error_set(err, OPR_EIO, "cannot rename '%s' to '%s': %s", tmp, final,
				   strerror(errno));
	if (rc) {
		unlink(tmp);
		return rc;
	}
	return opr_fsync_dir(dir, err);
}

int opr_read_file(const char *path, char **data, size_t *len, size_t max,
		  struct opr_error *err)
{
	int fd;
	int rc = opr_open_regular(path, &fd, err);
	if (rc)
		return rc;
	struct stat st;
	if (fstat(fd, &st)) {
		int e = errno;
		close(fd);
		return opr_error_set(err, OPR_EIO, "cannot read '%s': %s", path, strerror(e));
	}
	if ((uint64_t)st.st_size > max) {
		close(fd);
		return opr_error_set(err, OPR_EINPUT, "'%s' is %lld bytes; the limit is %zu",
				     path, (long long)st.st_size, max);
	}
	char *buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return opr_error_set(err, OPR_ENOMEM, "out of memory reading '%s'", path);
	}
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			/* an I/O error is not a short file */
			int e = errno;
			free(buf);
			close(fd);
			return opr_error_set(err, OPR_EIO, "cannot read '%s': %s", path, strerror(e));
		}
		if (r == 0)
			break; /* the file shrank since fstat: what is there is the file */
		got += (size_t)r;
	}
	close(fd);
	buf[got] = '\0';
	*data = buf;
	*len = got;
	return 0;
}
