/* collect/fsutil.c: the SHA-256 digest of the archive and the packet (libsodium);
 * the file and directory helpers are the shared opr_ ones of opreview_fs.c. */
#include "collect.h"

#include <sodium.h>

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
