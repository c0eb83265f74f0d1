/* collect/fsutil.c: file and digest helpers for the archive and the packet:
 * whole-file reads with a size cap, fsync'd writes, mkdir -p, rm -r, SHA-256. */
#include "collect.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void col_sha256_hex(const void *data, size_t len, char out[65])
{
	unsigned char h[crypto_hash_sha256_BYTES];
	static const char hex[] = "0123456789abcdef";
	crypto_hash_sha256(h, data, len);
	for (size_t i = 0; i < sizeof h; i++) {
		out[2 * i] = hex[h[i] >> 4];
		out[2 * i + 1] = hex[h[i] & 15];
	}
	out[64] = '\0';
}

int col_mkdirs(const char *path, struct opr_error *err)
{
	char buf[1024];
	if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
		return opr_error_set(err, OPR_EIO, "path too long: '%s'", path);
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

int col_write_file(const char *path, const void *data, size_t len, struct opr_error *err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return opr_error_set(err, OPR_EIO, "cannot write '%s': %s", path, strerror(errno));
	const char *p = data;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = w < 0 ? errno : ENOSPC;
			close(fd);
			return opr_error_set(err, OPR_EIO, "cannot write '%s': %s", path, strerror(e));
		}
		p += w;
		len -= (size_t)w;
	}
	if (fsync(fd)) {
		int e = errno;
		close(fd);
		return opr_error_set(err, OPR_EIO, "cannot sync '%s': %s", path, strerror(e));
	}
	if (close(fd))
		return opr_error_set(err, OPR_EIO, "cannot close '%s': %s", path, strerror(errno));
	return 0;
}

int col_read_file(const char *path, char **data, size_t *len, size_t max,
		  struct opr_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return opr_error_set(err, errno == ENOENT ? OPR_EINPUT : OPR_EIO,
				     "cannot read '%s': %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return opr_error_set(err, OPR_EINPUT, "cannot read '%s': not a regular file", path);
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

int col_fsync_dir(const char *dir, struct opr_error *err)
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

int col_rmtree(const char *path)
{
	struct stat st;
	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlink(path);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	struct dirent *e;
	int rc = 0;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char sub[1024];
		if (snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) >= (int)sizeof sub) {
			rc = -1;
			continue;
		}
		if (col_rmtree(sub))
			rc = -1;
	}
	closedir(d);
	if (rmdir(path))
		rc = -1;
	return rc;
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

int col_clean_stale(const char *target)
{
	char parent[1024], base[256];
	const char *slash = strrchr(target, '/');
	if (slash) {
		snprintf(parent, sizeof parent, "%.*s", (int)(slash - target), target);
		if (!parent[0])
			snprintf(parent, sizeof parent, "/");
		snprintf(base, sizeof base, "%s", slash + 1);
	} else {
		snprintf(parent, sizeof parent, ".");
		snprintf(base, sizeof base, "%s", target);
	}
	if (!base[0])
		return 0;
	DIR *d = opendir(parent);
	if (!d)
		return 0;
	struct dirent *e;
	int removed = 0;
	struct stat st;
	while ((e = readdir(d))) {
		char path[1300];
		snprintf(path, sizeof path, "%s/%s", parent, e->d_name);
		if (stale_sibling(e->d_name, base, "tmp")) {
			col_rmtree(path);
			removed++;
		} else if (stale_sibling(e->d_name, base, "old")) {
			/* killed between moving the old one aside and the new one in:
			 * put the old one back rather than lose it */
			if (stat(target, &st) && !rename(path, target))
				removed++;
			else if (!col_rmtree(path))
				removed++;
		}
	}
	closedir(d);
	return removed;
}
