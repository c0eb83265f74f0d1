/* collect/fsutil.c: file and digest helpers for the archive and the packet:
 * whole-file reads with a size cap, fsync'd writes, SHA-256 (the directory
 * helpers are the shared opr_ ones of opreview_fs.c). */
#include "collect.h"

#include <errno.h>
#include <fcntl.h>
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
