/* report/signoff.c: owner sign-off with libsodium (the only file of report/ that
 * uses it): Ed25519 key files, the packet's canonical MANIFEST, signed
 * approve/reject records and their verification. Contract in signoff.h. */
#include "signoff.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../collect/collect.h"

#define MANIFEST_HEADER "opreview-manifest v1\n"
#define RECORD_HEADER "opreview-signoff v1\n"
#define RECORD_HEADER_V2 "opreview-signoff v2\n"
#define MAX_KEY_FILE_BYTES (64u << 10)
#define MAX_OWNERS_BYTES (1u << 20)
#define MAX_RECORD_BYTES (64u << 10)
#define MAX_MANIFEST_BYTES (64u << 20)
#define MAX_PACKET_FILES 100000
#define MAX_PACKET_DEPTH 32
#define PATH_CAP 4096

/* DER prefixes of RFC 8410 key encodings, followed by the 32 key bytes:
 * PKCS#8 (RFC 5958) SEQUENCE { INTEGER 0, SEQUENCE { OID 1.3.101.112
 * (id-Ed25519) }, OCTET STRING { OCTET STRING (32) seed } }, and
 * SubjectPublicKeyInfo SEQUENCE { SEQUENCE { OID 1.3.101.112 },
 * BIT STRING (0 unused bits) key }. */
static const unsigned char pkcs8_prefix[16] = {0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06,
	0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20};
static const unsigned char spki_prefix[12] = {0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65,
	0x70, 0x03, 0x21, 0x00};

/* ---- small helpers ------------------------------------------------------------- */


static void to_hex(const unsigned char *h, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hex[h[i] >> 4];
		out[2 * i + 1] = hex[h[i] & 15];
	}
	out[2 * n] = '\0';
}

static int is_hex64(const char *s, size_t len)
{
	if (len != 64)
		return 0;
	for (size_t i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

/* A role names a file in signoff/: [A-Za-z0-9._-]+, starting alphanumeric. */
static int role_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n >= REP_ROLE_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-')))
			return 0;
	}
	return 1;
}

/* No control characters: the canonical record text is line-based. */
static int text_ok(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return 0;
	return 1;
}

static int crypto_ready(struct opr_error *err)
{
	if (sodium_init() < 0) /* 1 means already initialised */
		return opr_error_set(err, OPR_EINTERNAL, "libsodium could not be initialised");
	return 0;
}

static int join_path(char *out, size_t cap, const char *dir, const char *name,
		     struct opr_error *err)
{
	if (snprintf(out, cap, "%s/%s", dir, name) >= (int)cap)
		return opr_error_set(err, OPR_EIO, "path too long: '%s/%s'", dir, name);
	return 0;
}

/* ---- PEM ------------------------------------------------------------------------ */

static void pem_encode(const char *label, const unsigned char *der, size_t n, char *out,
		       size_t cap)
{
	/* the DER here is at most 48 bytes: one base64 line of at most 64
	 * characters, as PEM wants (RFC 7468) */
	char b64[sodium_base64_ENCODED_LEN(48, sodium_base64_VARIANT_ORIGINAL)];
	sodium_bin2base64(b64, sizeof b64, der, n, sodium_base64_VARIANT_ORIGINAL);
	snprintf(out, cap, "-----BEGIN %s-----\n%s\n-----END %s-----\n", label, b64, label);
}

static const char *find_bytes(const char *hay, size_t hlen, const char *needle)
{
	size_t n = strlen(needle);
	for (size_t i = 0; n <= hlen && i <= hlen - n; i++)
		if (!memcmp(hay + i, needle, n))
			return hay + i;
	return NULL;
}

/* Decodes the base64 body between the BEGIN/END lines of `label`. */
static int pem_decode(const char *text, size_t len, const char *label, unsigned char *der,
		      size_t cap, size_t *n)
{
	char begin[64], end[64];
	snprintf(begin, sizeof begin, "-----BEGIN %s-----", label);
	snprintf(end, sizeof end, "-----END %s-----", label);
	const char *b = find_bytes(text, len, begin);
	if (!b)
		return -1;
	b += strlen(begin);
	const char *e = find_bytes(b, len - (size_t)(b - text), end);
	if (!e)
		return -1;
	const char *stop = NULL;
	if (sodium_base642bin(der, cap, b, (size_t)(e - b), " \t\r\n", n, &stop,
			      sodium_base64_VARIANT_ORIGINAL) || stop != e)
		return -1;
	return 0;
}

/* ---- keys ----------------------------------------------------------------------- */

void rep_key_public_pem(const unsigned char pk[REP_ED25519_KEY_BYTES], char out[REP_PUBLIC_PEM_MAX])
{
	unsigned char der[sizeof spki_prefix + REP_ED25519_KEY_BYTES];
	memcpy(der, spki_prefix, sizeof spki_prefix);
	memcpy(der + sizeof spki_prefix, pk, REP_ED25519_KEY_BYTES);
	pem_encode("PUBLIC KEY", der, sizeof der, out, REP_PUBLIC_PEM_MAX);
}

void rep_key_fingerprint(const unsigned char pk[REP_ED25519_KEY_BYTES],
			 char out[REP_FINGERPRINT_MAX])
{
	unsigned char h[crypto_hash_sha256_BYTES];
	char hex[2 * sizeof h + 1];
	crypto_hash_sha256(h, pk, REP_ED25519_KEY_BYTES);
	to_hex(h, sizeof h, hex);
	snprintf(out, REP_FINGERPRINT_MAX, "sha256:%.16s", hex);
}

int rep_key_parse_public(const char *pem, size_t len, const char *what,
			 unsigned char pk[REP_ED25519_KEY_BYTES], struct opr_error *err)
{
	unsigned char der[128];
	size_t n = 0;
	if (pem_decode(pem, len, "PUBLIC KEY", der, sizeof der, &n) ||
	    n != sizeof spki_prefix + REP_ED25519_KEY_BYTES ||
	    memcmp(der, spki_prefix, sizeof spki_prefix))
		return opr_error_set(err, OPR_EINPUT,
				     "'%s' is not an Ed25519 public key (SPKI PEM)", what);
	memcpy(pk, der + sizeof spki_prefix, REP_ED25519_KEY_BYTES);
	return 0;
}

int rep_key_read_public(const char *path, unsigned char pk[REP_ED25519_KEY_BYTES],
			struct opr_error *err)
{
	char *text = NULL;
	size_t len = 0;
	int rc = opr_read_file(path, &text, &len, MAX_KEY_FILE_BYTES, err);
	if (rc)
		return rc;
	rc = rep_key_parse_public(text, len, path, pk, err);
	free(text);
	return rc;
}

int rep_key_read_private(const char *path, unsigned char seed[REP_ED25519_KEY_BYTES],
			 unsigned char pk[REP_ED25519_KEY_BYTES], struct opr_error *err)
{
	unsigned char der[128], sk[crypto_sign_SECRETKEYBYTES];
	char *text = NULL;
	size_t len = 0, n = 0;
	int rc = crypto_ready(err);
	if (!rc)
		rc = opr_read_file(path, &text, &len, MAX_KEY_FILE_BYTES, err);
	if (rc)
		return rc;
	if (pem_decode(text, len, "PRIVATE KEY", der, sizeof der, &n) ||
	    n != sizeof pkcs8_prefix + REP_ED25519_KEY_BYTES ||
	    memcmp(der, pkcs8_prefix, sizeof pkcs8_prefix)) {
		rc = opr_error_set(err, OPR_EINPUT,
				   "'%s' is not an Ed25519 private key (PKCS#8 PEM)", path);
	} else {
		memcpy(seed, der + sizeof pkcs8_prefix, REP_ED25519_KEY_BYTES);
		crypto_sign_seed_keypair(pk, sk, seed);
	}
	sodium_memzero(der, sizeof der);
	sodium_memzero(sk, sizeof sk);
	sodium_memzero(text, len);
	free(text);
	return rc;
}

int rep_keygen(const char *name, struct opr_error *err)
{
	char kpath[PATH_CAP], ppath[PATH_CAP], priv[256], pub[REP_PUBLIC_PEM_MAX];
	unsigned char seed[REP_ED25519_KEY_BYTES], pk[REP_ED25519_KEY_BYTES];
	unsigned char sk[crypto_sign_SECRETKEYBYTES], der[sizeof pkcs8_prefix + REP_ED25519_KEY_BYTES];
	int rc, kfd = -1, pfd = -1;

	if (!name || !*name)
		return opr_error_set(err, OPR_EUSAGE, "keygen: the key name is empty");
	if (snprintf(kpath, sizeof kpath, "%s.key", name) >= (int)sizeof kpath ||
	    snprintf(ppath, sizeof ppath, "%s.pub", name) >= (int)sizeof ppath)
		return opr_error_set(err, OPR_EUSAGE, "key name too long: '%s'", name);
	if ((rc = crypto_ready(err)))
		return rc;

	/* O_EXCL on both: an existing key is never replaced, and a .key created
	 * here is removed again when its .pub cannot be created */
	kfd = open(kpath, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (kfd < 0)
		return opr_error_set(err, errno == EEXIST ? OPR_EEXIST : OPR_EIO,
				     errno == EEXIST ? "'%s' exists; refusing to overwrite"
						     : "cannot create '%s'", kpath);
	pfd = open(ppath, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (pfd < 0) {
		rc = opr_error_set(err, errno == EEXIST ? OPR_EEXIST : OPR_EIO,
				   errno == EEXIST ? "'%s' exists; refusing to overwrite"
						   : "cannot create '%s'", ppath);
		close(kfd);
		unlink(kpath);
		return rc;
	}

	randombytes_buf(seed, sizeof seed);
	crypto_sign_seed_keypair(pk, sk, seed);
	memcpy(der, pkcs8_prefix, sizeof pkcs8_prefix);
	memcpy(der + sizeof pkcs8_prefix, seed, sizeof seed);
	pem_encode("PRIVATE KEY", der, sizeof der, priv, sizeof priv);
	rep_key_public_pem(pk, pub);

	if (fchmod(kfd, 0600)) /* the mode asked of open() is narrowed by umask only */
		rc = opr_error_set(err, OPR_EIO, "cannot chmod '%s': %s", kpath, strerror(errno));
	if (!rc)
		rc = opr_write_fd(kfd, priv, strlen(priv), kpath, err);
	if (!rc)
		rc = opr_write_fd(pfd, pub, strlen(pub), ppath, err);
	if (close(kfd) && !rc)
		rc = opr_error_set(err, OPR_EIO, "cannot close '%s': %s", kpath, strerror(errno));
	if (close(pfd) && !rc)
		rc = opr_error_set(err, OPR_EIO, "cannot close '%s': %s", ppath, strerror(errno));
	if (rc) {
		unlink(kpath);
		unlink(ppath);
	}
	sodium_memzero(seed, sizeof seed);
	sodium_memzero(sk, sizeof sk);
	sodium_memzero(der, sizeof der);
	sodium_memzero(priv, sizeof priv);
	return rc;
}

/* ---- owners.json ---------------------------------------------------------------- */

static int set_str(json_t *o, const char *key, const char *val)
{
	json_t *s = json_string(val); /* NULL on invalid UTF-8 or out of memory */
	return s ? json_object_set_new(o, key, s) : -1;
}

static int dump_json(json_t *root, char **text, size_t *len)
{
	char *s = json_dumps(root, JSON_INDENT(2));
	if (!s)
		return -1;
	size_t n = strlen(s);
	char *t = realloc(s, n + 2);
	if (!t) {
		free(s);
		return -1;
	}
	t[n] = '\n';
	t[n + 1] = '\0';
	*text = t;
	*len = n + 1;
	return 0;
}

int rep_owners_write(const char *packet_dir, const struct col_owner *owners, int n,
		     const char *profile_dir, struct opr_error *err)
{
	char path[PATH_CAP], pem[REP_PUBLIC_PEM_MAX], *text = NULL;
	unsigned char pk[REP_ED25519_KEY_BYTES];
	size_t len = 0;
	int rc = 0;

	if (n <= 0 || n > REP_MAX_ROLES)
		return opr_error_set(err, OPR_EINPUT, "a packet needs 1 to %d owners, not %d",
				     REP_MAX_ROLES, n);
	if ((rc = crypto_ready(err)))
		return rc;
	json_t *root = json_object(), *arr = json_array();
	if (!root || !arr || json_object_set_new(root, "owners", arr)) {
		json_decref(root);
		return opr_error_set(err, OPR_ENOMEM, "out of memory writing owners.json");
	}
	for (int i = 0; i < n && !rc; i++) {
		const struct col_owner *o = &owners[i];
		if (!role_ok(o->role) || !text_ok(o->name) || !o->name[0]) {
			rc = opr_error_set(err, OPR_EINPUT, "owner %d: bad role '%s' or name '%s'",
					   i + 1, o->role, o->name);
			break;
		}
		if (o->key[0] == '/' || !profile_dir || !*profile_dir)
			snprintf(path, sizeof path, "%s", o->key);
		else if (snprintf(path, sizeof path, "%s/%s", profile_dir, o->key) >= (int)sizeof path)
			path[0] = '\0';
		struct opr_error kerr = {0};
		int krc = path[0] ? rep_key_read_public(path, pk, &kerr)
				  : opr_error_set(&kerr, OPR_EINPUT, "key path too long: '%s'", o->key);
		json_t *e = json_object();
		if (!e || json_array_append_new(arr, e) || set_str(e, "role", o->role) ||
		    set_str(e, "name", o->name)) {
			rc = opr_error_set(err, OPR_EINPUT, "cannot record owner '%s' (not UTF-8, or "
					   "out of memory)", o->name);
			break;
		}
		if (!krc) {
			rep_key_public_pem(pk, pem);
			if (set_str(e, "public_key_pem", pem))
				rc = opr_error_set(err, OPR_ENOMEM, "out of memory writing owners.json");
		} else if (json_object_set_new(e, "public_key_pem", json_null()) ||
			   set_str(e, "key_error", kerr.msg)) {
			rc = opr_error_set(err, OPR_ENOMEM, "out of memory writing owners.json");
		}
	}
	if (!rc && dump_json(root, &text, &len))
		rc = opr_error_set(err, OPR_ENOMEM, "out of memory writing owners.json");
	if (!rc && !(rc = join_path(path, sizeof path, packet_dir, REP_OWNERS_NAME, err)))
		rc = opr_write_file(path, text, len, err);
	free(text);
	json_decref(root);
	return rc;
}

/* The owners as a verifier reads them back from the packet. */
struct owner_rec {
	char role[REP_ROLE_MAX];
	char name[REP_OWNER_MAX];
	int has_key;
	unsigned char pk[REP_ED25519_KEY_BYTES];
	char key_error[512];
};
struct owners_file {
	struct owner_rec o[REP_MAX_ROLES];
	int n;
};

static int packet_dir_ok(const char *dir, struct opr_error *err)
{
	struct stat st;
	char path[PATH_CAP];
	if (lstat(dir, &st) || !S_ISDIR(st.st_mode))
		return opr_error_set(err, OPR_EINPUT, "'%s' is not a packet directory", dir);
	int rc = join_path(path, sizeof path, dir, REP_OWNERS_NAME, err);
	if (!rc && lstat(path, &st))
		rc = opr_error_set(err, OPR_EINPUT, "'%s' is not a packet: it has no %s", dir,
				   REP_OWNERS_NAME);
	return rc;
}

static int owners_load(const char *dir, struct owners_file *of, struct opr_error *err)
{
	char path[PATH_CAP], *text = NULL;
	size_t len = 0;
	json_error_t je;
	int rc;

	memset(of, 0, sizeof *of);
	if ((rc = packet_dir_ok(dir, err)) || (rc = join_path(path, sizeof path, dir,
							       REP_OWNERS_NAME, err)))
		return rc;
	if ((rc = opr_read_file(path, &text, &len, MAX_OWNERS_BYTES, err)))
		return rc;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	free(text);
	if (!root)
		return opr_error_at(err, OPR_EINPUT, path, je.line, je.column, "%s", je.text);
	json_t *arr = json_object_get(root, "owners");
	size_t n = json_array_size(arr);
	if (!json_is_array(arr) || n == 0 || n > REP_MAX_ROLES) {
		rc = opr_error_set(err, OPR_EINPUT, "'%s' must hold \"owners\": 1 to %d owners",
				   path, REP_MAX_ROLES);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(arr, i);
		const char *role = json_string_value(json_object_get(e, "role"));
		const char *name = json_string_value(json_object_get(e, "name"));
		json_t *key = json_object_get(e, "public_key_pem");
		const char *kerr = json_string_value(json_object_get(e, "key_error"));
		struct owner_rec *o = &of->o[i];
		if (!role || !role_ok(role) || !name || !*name || !text_ok(name) ||
		    strlen(name) >= sizeof o->name || !(json_is_string(key) || json_is_null(key))) {
			rc = opr_error_set(err, OPR_EINPUT, "'%s': owner %zu needs a role "
					   "([A-Za-z0-9._-]), a name and \"public_key_pem\"", path, i + 1);
			goto out;
		}
		for (size_t j = 0; j < i; j++)
			if (!strcmp(of->o[j].role, role)) {
				rc = opr_error_set(err, OPR_EINPUT, "'%s': duplicate role '%s'", path, role);
				goto out;
			}
		snprintf(o->role, sizeof o->role, "%s", role);
		snprintf(o->name, sizeof o->name, "%s", name);
		if (json_is_string(key)) {
			struct opr_error perr = {0};
			o->has_key = !rep_key_parse_public(json_string_value(key), json_string_length(key),
							   "public_key_pem", o->pk, &perr);
			if (!o->has_key)
				snprintf(o->key_error, sizeof o->key_error, "%.500s", perr.msg);
		} else {
			snprintf(o->key_error, sizeof o->key_error, "%s",
				 kerr ? kerr : "owners.json has no key for the role");
		}
	}
	of->n = (int)n;
out:
	json_decref(root);
	return rc;
}

static const struct owner_rec *owner_find(const struct owners_file *of, const char *role)
{
	for (int i = 0; i < of->n; i++)
		if (!strcmp(of->o[i].role, role))
			return &of->o[i];
	return NULL;
}

/* ---- the manifest ------------------------------------------------------------------ */

struct mf_entry {
	char *path;
	char hex[65];
};
struct mf_list {
	struct mf_entry *v;
	size_t n, cap;
};

static void mf_release(struct mf_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].path);
	free(l->v);
	memset(l, 0, sizeof *l);
}

static int mf_push(struct mf_list *l, const char *path, size_t plen, const char *hex)
{
	if (OPR_GROW(l->v, l->n, l->cap, 32))
		return -1;
	char *p = malloc(plen + 1);
	if (!p)
		return -1;
	memcpy(p, path, plen);
	p[plen] = '\0';
	l->v[l->n].path = p;
	memcpy(l->v[l->n].hex, hex, 64);
	l->v[l->n].hex[64] = '\0';
	l->n++;
	return 0;
}

static int mf_cmp(const void *a, const void *b)
{
	/* strcmp orders by unsigned char: bytewise, whatever the locale */
	return strcmp(((const struct mf_entry *)a)->path, ((const struct mf_entry *)b)->path);
}

static int hash_file(const char *full, const char *rel, char hex[65], struct opr_error *err)
{
	unsigned char buf[32768], h[crypto_hash_sha256_BYTES];
	crypto_hash_sha256_state st;
	struct stat sb;
	/* O_NONBLOCK: a FIFO planted in a packet must not hang verify */
	int fd = open(full, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return opr_error_set(err, OPR_EIO, "cannot read '%s': %s", full, strerror(errno));
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		close(fd);
		return opr_error_set(err, OPR_EINPUT, "'%s' is not a regular file", rel);
	}
	crypto_hash_sha256_init(&st);
	for (;;) {
		ssize_t r = read(fd, buf, sizeof buf);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			close(fd);
			return opr_error_set(err, OPR_EIO, "cannot read '%s': %s", full, strerror(e));
		}
		if (r == 0)
			break;
		crypto_hash_sha256_update(&st, buf, (unsigned long long)r);
	}
	close(fd);
	crypto_hash_sha256_final(&st, h);
	to_hex(h, sizeof h, hex);
	return 0;
}

/* Lists root/rel recursively into l (rel "" is the packet's top). */
static int walk(const char *root, const char *rel, int depth, struct mf_list *l,
		struct opr_error *err)
{
	char full[PATH_CAP], sub[PATH_CAP];
	int rc = 0;
	if (depth > MAX_PACKET_DEPTH)
		return opr_error_set(err, OPR_ELIMIT, "'%s' is nested more than %d levels deep",
				     rel, MAX_PACKET_DEPTH);
	if (snprintf(full, sizeof full, "%s%s%s", root, *rel ? "/" : "", rel) >= (int)sizeof full)
		return opr_error_set(err, OPR_EIO, "path too long: '%s/%s'", root, rel);
	DIR *d = opendir(full);
	if (!d)
		return opr_error_set(err, OPR_EIO, "cannot list '%s': %s", full, strerror(errno));
	struct dirent *e;
	while (!rc && (errno = 0, e = readdir(d))) {
		const char *name = e->d_name;
		struct stat st;
		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		if (!*rel && (!strcmp(name, REP_MANIFEST_NAME) || !strcmp(name, REP_SIGNOFF_DIR)))
			continue;
		if (snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", name) >= (int)sizeof sub) {
			rc = opr_error_set(err, OPR_EIO, "path too long: '%s/%s'", rel, name);
			break;
		}
		if (strchr(name, '\n')) {
			rc = opr_error_set(err, OPR_EINPUT, "a packet path holds a newline: '%s'", sub);
			break;
		}
		char path[PATH_CAP];
		if (snprintf(path, sizeof path, "%s/%s", root, sub) >= (int)sizeof path) {
			rc = opr_error_set(err, OPR_EIO, "path too long: '%s/%s'", root, sub);
			break;
		}
		if (lstat(path, &st)) {
			rc = opr_error_set(err, OPR_EIO, "cannot stat '%s': %s", path, strerror(errno));
		} else if (S_ISLNK(st.st_mode)) {
			rc = opr_error_set(err, OPR_EINPUT, "'%s' is a symbolic link; a packet holds "
					   "regular files only", sub);
		} else if (S_ISDIR(st.st_mode)) {
			rc = walk(root, sub, depth + 1, l, err);
		} else if (!S_ISREG(st.st_mode)) {
			rc = opr_error_set(err, OPR_EINPUT, "'%s' is not a regular file", sub);
		} else if (l->n >= MAX_PACKET_FILES) {
			rc = opr_error_set(err, OPR_ELIMIT, "a packet holds at most %d files",
					   MAX_PACKET_FILES);
		} else {
			char hex[65];
			if (!(rc = hash_file(path, sub, hex, err)) && mf_push(l, sub, strlen(sub), hex))
				rc = opr_error_set(err, OPR_ENOMEM, "out of memory listing '%s'", root);
		}
	}
	if (!rc && errno)
		rc = opr_error_set(err, OPR_EIO, "cannot list '%s': %s", full, strerror(errno));
	closedir(d);
	return rc;
}

static int mf_text(const struct mf_list *l, char **text, size_t *len, struct opr_error *err)
{
	struct opr_buf b = {0};
	opr_buf_puts(&b, MANIFEST_HEADER);
	for (size_t i = 0; i < l->n; i++) {
		opr_buf_add(&b, l->v[i].hex, 64);
		opr_buf_add(&b, "  ", 2);
		opr_buf_puts(&b, l->v[i].path);
		opr_buf_add(&b, "\n", 1);
	}
	*len = b.len;
	if (!(*text = opr_buf_take(&b)))
		return opr_error_set(err, OPR_ENOMEM, "out of memory writing the manifest");
	return 0;
}

int rep_manifest_build(const char *packet_dir, char **text, size_t *len, size_t *nfiles,
		       struct opr_error *err)
{
	struct mf_list l = {0};
	int rc = crypto_ready(err);
	if (!rc)
		rc = walk(packet_dir, "", 0, &l, err);
	if (!rc) {
		if (l.n)
			qsort(l.v, l.n, sizeof *l.v, mf_cmp);
		rc = mf_text(&l, text, len, err);
		if (!rc && nfiles)
			*nfiles = l.n;
	}
	mf_release(&l);
	return rc;
}

/* Parses a manifest text into a list sorted by path; `what` names it in
 * messages. Duplicate paths and any deviation from the format are errors. */
static int mf_parse(const char *t, size_t len, const char *what, struct mf_list *l,
		    struct opr_error *err)
{
	size_t hl = strlen(MANIFEST_HEADER), pos, line = 2;
	if (len < hl || memcmp(t, MANIFEST_HEADER, hl))
		return opr_error_at(err, OPR_EINPUT, what, 1, 1, "not an opreview-manifest v1");
	for (pos = hl; pos < len; line++) {
		const char *s = t + pos, *nl = memchr(s, '\n', len - pos);
		if (!nl)
			return opr_error_at(err, OPR_EINPUT, what, (int)line, 1,
					    "the last line has no newline");
		size_t n = (size_t)(nl - s);
		if (n < 67 || !is_hex64(s, 64) || s[64] != ' ' || s[65] != ' ' ||
		    memchr(s, '\0', n))
			return opr_error_at(err, OPR_EINPUT, what, (int)line, 1,
					    "expected '<sha256>  <path>'");
		if (mf_push(l, s + 66, n - 66, s))
			return opr_error_set(err, OPR_ENOMEM, "out of memory reading '%s'", what);
		pos += n + 1;
	}
	if (l->n)
		qsort(l->v, l->n, sizeof *l->v, mf_cmp);
	for (size_t i = 1; i < l->n; i++)
		if (!strcmp(l->v[i - 1].path, l->v[i].path))
			return opr_error_set(err, OPR_EINPUT, "'%s' lists '%s' twice", what,
					     l->v[i].path);
	return 0;
}

int rep_manifest_diff(const char *recorded, size_t recorded_len, const char *now,
		      size_t now_len, char **diff, size_t counts[3], struct opr_error *err)
{
	struct mf_list a = {0}, b = {0};
	struct opr_buf out = {0};
	size_t i = 0, j = 0;
	int rc = mf_parse(recorded, recorded_len, REP_MANIFEST_NAME, &a, err);
	if (!rc)
		rc = mf_parse(now, now_len, "the recomputed manifest", &b, err);
	counts[0] = counts[1] = counts[2] = 0;
	while (!rc && (i < a.n || j < b.n)) {
		int c = i == a.n ? 1 : j == b.n ? -1 : strcmp(a.v[i].path, b.v[j].path);
		if (c == 0) {
			if (strcmp(a.v[i].hex, b.v[j].hex)) {
				opr_buf_printf(&out, "changed: %s\n", a.v[i].path);
				counts[0]++;
			}
			i++;
			j++;
		} else if (c > 0) {
			opr_buf_printf(&out, "added: %s\n", b.v[j++].path);
			counts[1]++;
		} else {
			opr_buf_printf(&out, "removed: %s\n", a.v[i++].path);
			counts[2]++;
		}
	}
	mf_release(&a);
	mf_release(&b);
	char *s = opr_buf_take(&out);
	if (!rc && !s)
		rc = opr_error_set(err, OPR_ENOMEM, "out of memory comparing manifests");
	if (rc) {
		free(s);
		return rc;
	}
	*diff = s;
	return 0;
}

/* ---- records -------------------------------------------------------------------- */

struct record {
	char role[REP_ROLE_MAX];
	char owner[REP_OWNER_MAX];
	char decision[8];
	char comment[REP_COMMENT_MAX + 1];
	char time[32];
	char manifest_sha256[65];
	/* v2: the closure artifact this role signs for ("" in a v1 record) */
	char artifact[REP_ROLE_MAX + 16];
	char artifact_sha256[65];
	unsigned char sig[crypto_sign_BYTES];
};

/* The text a signature covers (signoff.h): v1 without an artifact, v2 with
 * the artifact's path and digest appended. *text malloc'd. */
static int record_text(const struct record *r, char **text, size_t *len)
{
	struct opr_buf b = {0};
	if (!r->artifact[0])
		opr_buf_printf(&b, RECORD_HEADER "role=%s\nowner=%s\ndecision=%s\ncomment=%s\ntime=%s\n"
			  "manifest_sha256=%s\n", r->role, r->owner, r->decision, r->comment, r->time,
			  r->manifest_sha256);
	else
		opr_buf_printf(&b, RECORD_HEADER_V2 "role=%s\nowner=%s\ndecision=%s\ncomment=%s\ntime=%s\n"
			  "manifest_sha256=%s\nartifact=%s\nartifact_sha256=%s\n", r->role, r->owner,
			  r->decision, r->comment, r->time, r->manifest_sha256, r->artifact,
			  r->artifact_sha256);
	*len = b.len;
	return (*text = opr_buf_take(&b)) ? 0 : -1;
}

static const char *const record_keys[] = {"role", "owner", "decision", "comment", "time",
	"manifest_sha256", "signature", NULL};

/* Reads a record: 0, or 1 with why set when the record is unreadable or
 * malformed, or a negative code (out of memory, I/O) in err. */
static int record_load(const char *path, struct record *r, char *why, size_t whycap,
		       struct opr_error *err)
{
	char *text = NULL;
	size_t len = 0;
	json_error_t je;
	struct opr_error rerr = {0};
	int rc = opr_read_file(path, &text, &len, MAX_RECORD_BYTES, &rerr);
	if (rc == OPR_ENOMEM || rc == OPR_EIO)
		return opr_error_set(err, rc, "%s", rerr.msg);
	if (rc) {
		snprintf(why, whycap, "%.500s", rerr.msg);
		return 1;
	}
	json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	free(text);
	memset(r, 0, sizeof *r);
	rc = 1;
	if (!o || !json_is_object(o)) {
		snprintf(why, whycap, "malformed record: %s", o ? "not an object" : je.text);
		goto out;
	}
	size_t nfields = json_object_size(o);
	if (nfields != 7 && nfields != 9) {
		snprintf(why, whycap, "malformed record: it must hold exactly the 7 fields (9 with an artifact)");
		goto out;
	}
	if (nfields == 9) {
		const char *a = json_string_value(json_object_get(o, "artifact"));
		const char *d = json_string_value(json_object_get(o, "artifact_sha256"));
		if (!a || !d || !text_ok(a) || strlen(a) >= sizeof r->artifact || !*a ||
		    !is_hex64(d, strlen(d))) {
			snprintf(why, whycap, "malformed record: bad or missing \"artifact\" or \"artifact_sha256\"");
			goto out;
		}
		snprintf(r->artifact, sizeof r->artifact, "%s", a);
		snprintf(r->artifact_sha256, sizeof r->artifact_sha256, "%s", d);
	}
	char *dst[] = {r->role, r->owner, r->decision, r->comment, r->time, r->manifest_sha256};
	size_t cap[] = {sizeof r->role, sizeof r->owner, sizeof r->decision, sizeof r->comment,
		sizeof r->time, sizeof r->manifest_sha256};
	for (int k = 0; record_keys[k]; k++) {
		json_t *v = json_object_get(o, record_keys[k]);
		const char *s = json_string_value(v);
		if (!s || strlen(s) != json_string_length(v) || !text_ok(s) ||
		    (k < 6 && strlen(s) >= cap[k])) {
			snprintf(why, whycap, "malformed record: bad or missing \"%s\"", record_keys[k]);
			goto out;
		}
		if (k < 6) {
			snprintf(dst[k], cap[k], "%s", s);
			continue;
		}
		size_t n = 0;
		const char *end = NULL;
		if (sodium_base642bin(r->sig, sizeof r->sig, s, strlen(s), NULL, &n, &end,
				      sodium_base64_VARIANT_ORIGINAL) || n != sizeof r->sig ||
		    *end) {
			snprintf(why, whycap, "malformed record: \"signature\" is not 64 bytes of base64");
			goto out;
		}
	}
	if (strcmp(r->decision, "approve") && strcmp(r->decision, "reject")) {
		snprintf(why, whycap, "malformed record: decision '%s'", r->decision);
		goto out;
	}
	if (!is_hex64(r->manifest_sha256, strlen(r->manifest_sha256))) {
		snprintf(why, whycap, "malformed record: \"manifest_sha256\" is not 64 hex digits");
		goto out;
	}
	rc = 0;
out:
	json_decref(o);
	return rc;
}

static int signature_ok(const struct record *r, const unsigned char pk[REP_ED25519_KEY_BYTES],
			struct opr_error *err)
{
	char *text = NULL;
	size_t len = 0;
	if (record_text(r, &text, &len))
		return opr_error_set(err, OPR_ENOMEM, "out of memory checking a signature");
	int ok = crypto_sign_verify_detached(r->sig, (const unsigned char *)text, len, pk) == 0;
	free(text);
	return ok;
}

/* ---- signing --------------------------------------------------------------------- */

static int diff_message(const char *diff, char *out, size_t cap)
{
	/* "changed: a, added: b" from the diff's lines, cut to fit */
	size_t w = 0;
	out[0] = '\0';
	for (const char *p = diff; *p && w + 1 < cap;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		int k = snprintf(out + w, cap - w, "%s%.*s", w ? ", " : "", (int)n, p);
		if (k < 0)
			break;
		w += (size_t)k;
		p += n + (nl ? 1 : 0);
	}
	return 0;
}

/* The closure artifact of a role: REP_CLOSURE_DIR/<role>.md in the packet
 * (report/packet.c writes one per role) and its SHA-256; path "" when the
 * packet has none (a packet of an older opreview). */
static int artifact_of(const char *packet_dir, const char *role, char *path, size_t cap,
		       char sha[65], struct opr_error *err)
{
	char full[PATH_CAP];
	struct stat st;
	path[0] = sha[0] = '\0';
	if (snprintf(full, sizeof full, "%s/%s/%s.md", packet_dir, REP_CLOSURE_DIR, role) >= (int)sizeof full)
		return opr_error_set(err, OPR_EIO, "path too long: '%s/%s/%s.md'", packet_dir, REP_CLOSURE_DIR, role);
	if (lstat(full, &st) || !S_ISREG(st.st_mode))
		return 0;
	char *data = NULL;
	size_t len = 0;
	int rc = opr_read_file(full, &data, &len, 64u << 20, err);
	if (rc)
		return rc;
	col_sha256_hex(data, len, sha);
	free(data);
	snprintf(path, cap, "%s/%s.md", REP_CLOSURE_DIR, role);
	return 0;
}

/* The files a signature covers, as the packet holds them now, beside the
 * MANIFEST that pins them: the manifest now (text, malloc'd) and its digest,
 * and when MANIFEST exists its text and how the two differ. What goes wrong
 * reading or comparing MANIFEST is kept for the caller to judge: sign
 * refuses, verify reports it among the problems. */
struct manifest_state {
	char *text;
	size_t len, nfiles;
	char sha256[65];
	int present;    /* MANIFEST exists */
	int stat_errno; /* when it does not, lstat's errno */
	char *old;      /* MANIFEST's text */
	size_t oldlen;
	int read_rc;    /* reading MANIFEST: 0 or the error in read_err */
	struct opr_error read_err;
	char *diff; /* rep_manifest_diff of old against text */
	size_t counts[3];
	int diff_rc; /* comparing: 0 or the error in diff_err */
	struct opr_error diff_err;
};

/* Fills m for packet_dir; an error building the manifest (or its path) is
 * returned, the rest is in m. m is released with manifest_release either way. */
static int manifest_read(const char *packet_dir, struct manifest_state *m, struct opr_error *err)
{
	char path[PATH_CAP];
	struct stat st;
	int rc;

	memset(m, 0, sizeof *m);
	if ((rc = rep_manifest_build(packet_dir, &m->text, &m->len, &m->nfiles, err)))
		return rc;
	col_sha256_hex(m->text, m->len, m->sha256);
	if ((rc = join_path(path, sizeof path, packet_dir, REP_MANIFEST_NAME, err)))
		return rc;
	if (lstat(path, &st)) {
		m->stat_errno = errno;
		return 0;
	}
	m->present = 1;
	if ((m->read_rc = opr_read_file(path, &m->old, &m->oldlen, MAX_MANIFEST_BYTES, &m->read_err)))
		return 0;
	m->diff_rc = rep_manifest_diff(m->old, m->oldlen, m->text, m->len, &m->diff, m->counts, &m->diff_err);
	return 0;
}

static void manifest_release(struct manifest_state *m)
{
	free(m->text);
	free(m->old);
	free(m->diff);
	m->text = m->old = m->diff = NULL;
}

/* The packet's manifest as it is now, for a signature: written as MANIFEST
 * by the first signer, and from then on what the packet must still match,
 * or OPR_EMISMATCH naming what changed. */
static int manifest_pin(const char *packet_dir, struct manifest_state *m, struct opr_error *err)
{
	int rc = manifest_read(packet_dir, m, err);
	if (rc)
		return rc;
	if (!m->present && m->stat_errno != ENOENT) {
		char path[PATH_CAP];
		snprintf(path, sizeof path, "%s/%s", packet_dir, REP_MANIFEST_NAME);
		return opr_error_set(err, OPR_EIO, "cannot stat '%s': %s", path, strerror(m->stat_errno));
	}
	if (!m->present)
		return opr_replace_file(packet_dir, REP_MANIFEST_NAME, m->text, m->len, err);
	if (m->read_rc) {
		if (err)
			*err = m->read_err;
		return m->read_rc;
	}
	if (m->oldlen != m->len || memcmp(m->old, m->text, m->len)) {
		char msg[600];
		if (m->diff_rc)
			snprintf(msg, sizeof msg, "%.590s", m->diff_err.msg);
		else
			diff_message(m->diff, msg, sizeof msg);
		return opr_error_set(err, OPR_EMISMATCH, "the packet no longer matches its "
				     "MANIFEST (%s); refusing to sign what others did not", msg);
	}
	return 0;
}

/* PACKET/signoff/ into sdir, created when missing; a non-directory there is
 * an input error. */
static int signoff_dir(const char *packet_dir, char *sdir, size_t n, struct opr_error *err)
{
	struct stat st;
	int rc = join_path(sdir, n, packet_dir, REP_SIGNOFF_DIR, err);
	if (rc)
		return rc;
	if (lstat(sdir, &st)) {
		if (mkdir(sdir, 0755) && errno != EEXIST)
			return opr_error_set(err, OPR_EIO, "cannot create '%s': %s", sdir, strerror(errno));
	} else if (!S_ISDIR(st.st_mode)) {
		return opr_error_set(err, OPR_EINPUT, "'%s' is not a directory", sdir);
	}
	return 0;
}

/* What sign is asked: a role, a key and a comment of one line. */
static int sign_args_ok(const struct rep_sign_options *o, const char *comment, struct opr_error *err)
{
	if (!o->role || !o->key_path)
		return opr_error_set(err, OPR_EUSAGE, "sign: a role and a key are required");
	if (strlen(comment) > REP_COMMENT_MAX || !text_ok(comment))
		return opr_error_set(err, OPR_EUSAGE, "the comment must be one line of at most %d "
				     "bytes without control characters", REP_COMMENT_MAX);
	json_t *probe = json_string(comment);
	if (!probe)
		return opr_error_set(err, OPR_EUSAGE, "the comment is not valid UTF-8");
	json_decref(probe);
	return 0;
}

/* The owner of o->role in of, whose public key the private key at
 * o->key_path (read into seed and pk) must match. */
static int signer_of(const struct owners_file *of, const struct rep_sign_options *o,
		     const struct owner_rec **owner, unsigned char seed[REP_ED25519_KEY_BYTES],
		     unsigned char pk[REP_ED25519_KEY_BYTES], struct opr_error *err)
{
	char fp_key[REP_FINGERPRINT_MAX], fp_role[REP_FINGERPRINT_MAX];
	const struct owner_rec *ow = owner_find(of, o->role);
	int rc;

	if (!ow) {
		char list[1024] = "";
		size_t w = 0;
		for (int i = 0; i < of->n && w < sizeof list; i++)
			w += (size_t)snprintf(list + w, sizeof list - w, "%s%s", i ? ", " : "",
					      of->o[i].role);
		return opr_error_set(err, OPR_EUSAGE, "role '%s' is not among the packet's owners (%s)",
				     o->role, list);
	}
	if (!ow->has_key)
		return opr_error_set(err, OPR_EINPUT, "role '%s' has no public key in owners.json: %s",
				     o->role, ow->key_error);
	if ((rc = rep_key_read_private(o->key_path, seed, pk, err)))
		return rc;
	if (memcmp(pk, ow->pk, REP_ED25519_KEY_BYTES)) {
		rep_key_fingerprint(pk, fp_key);
		rep_key_fingerprint(ow->pk, fp_role);
		return opr_error_set(err, OPR_EUSAGE, "key '%s' (%s) does not belong to role '%s' "
				     "(owner %s, key %s)", o->key_path, fp_key, o->role, ow->name, fp_role);
	}
	*owner = ow;
	return 0;
}

/* Signs record r (its fields filled) with the key of seed and writes it as
 * sdir/ROLE.json. */
static int record_write(const char *packet_dir, const char *sdir, struct record *r,
			const unsigned char seed[REP_ED25519_KEY_BYTES], struct opr_error *err)
{
	unsigned char pk[REP_ED25519_KEY_BYTES], sk[crypto_sign_SECRETKEYBYTES];
	char *rtext = NULL, *json = NULL;
	size_t rlen = 0, jlen = 0;
	json_t *root = NULL;
	int rc = 0;

	if (record_text(r, &rtext, &rlen)) {
		rc = opr_error_set(err, OPR_ENOMEM, "out of memory signing '%s'", packet_dir);
		goto out;
	}
	crypto_sign_seed_keypair(pk, sk, seed);
	crypto_sign_detached(r->sig, NULL, (const unsigned char *)rtext, rlen, sk);
	char b64[sodium_base64_ENCODED_LEN(crypto_sign_BYTES, sodium_base64_VARIANT_ORIGINAL)];
	sodium_bin2base64(b64, sizeof b64, r->sig, sizeof r->sig, sodium_base64_VARIANT_ORIGINAL);

	root = json_object();
	if (!root || set_str(root, "role", r->role) || set_str(root, "owner", r->owner) ||
	    set_str(root, "decision", r->decision) || set_str(root, "comment", r->comment) ||
	    set_str(root, "time", r->time) || set_str(root, "manifest_sha256", r->manifest_sha256) ||
	    set_str(root, "signature", b64) ||
	    (r->artifact[0] && (set_str(root, "artifact", r->artifact) ||
				set_str(root, "artifact_sha256", r->artifact_sha256))) ||
	    dump_json(root, &json, &jlen)) {
		rc = opr_error_set(err, OPR_ENOMEM, "out of memory signing '%s'", packet_dir);
		goto out;
	}
	char fname[REP_ROLE_MAX + 8];
	snprintf(fname, sizeof fname, "%s.json", r->role);
	rc = opr_replace_file(sdir, fname, json, jlen, err);
out:
	sodium_memzero(sk, sizeof sk);
	json_decref(root);
	free(rtext);
	free(json);
	return rc;
}

int rep_sign(const char *packet_dir, const struct rep_sign_options *o,
	     struct rep_signoff_info *info, struct opr_error *err)
{
	struct owners_file *of = NULL;
	const struct owner_rec *owner = NULL;
	struct record r;
	unsigned char seed[REP_ED25519_KEY_BYTES], pk[REP_ED25519_KEY_BYTES];
	char sdir[PATH_CAP];
	struct manifest_state m = {0};
	int rc;
	const char *comment = o->comment ? o->comment : "";

	memset(&r, 0, sizeof r);
	if ((rc = sign_args_ok(o, comment, err)) || (rc = crypto_ready(err)))
		return rc;
	if (!(of = malloc(sizeof *of)))
		return opr_error_set(err, OPR_ENOMEM, "out of memory signing '%s'", packet_dir);
	if ((rc = owners_load(packet_dir, of, err)) || (rc = signer_of(of, o, &owner, seed, pk, err)))
		goto out;

	/* the manifest: written by the first signer, then fixed */
	if ((rc = manifest_pin(packet_dir, &m, err)) ||
	    (rc = signoff_dir(packet_dir, sdir, sizeof sdir, err)))
		goto out;

	/* the role's closure artifact, when the packet holds one */
	if ((rc = artifact_of(packet_dir, owner->role, r.artifact, sizeof r.artifact, r.artifact_sha256,
			      err)))
		goto out;

	/* the record and its signature */
	time_t now = o->now ? o->now : time(NULL);
	struct tm tm;
	if (!gmtime_r(&now, &tm) || !strftime(r.time, sizeof r.time, "%Y-%m-%dT%H:%M:%SZ", &tm)) {
		rc = opr_error_set(err, OPR_EINTERNAL, "cannot format the time %lld", (long long)now);
		goto out;
	}
	snprintf(r.role, sizeof r.role, "%s", owner->role);
	snprintf(r.owner, sizeof r.owner, "%s", owner->name);
	snprintf(r.decision, sizeof r.decision, "%s", o->reject ? "reject" : "approve");
	snprintf(r.comment, sizeof r.comment, "%s", comment);
	snprintf(r.manifest_sha256, sizeof r.manifest_sha256, "%s", m.sha256);
	if ((rc = record_write(packet_dir, sdir, &r, seed, err)))
		goto out;
	if (info) {
		memset(info, 0, sizeof *info);
		snprintf(info->role, sizeof info->role, "%s", r.role);
		snprintf(info->owner, sizeof info->owner, "%s", r.owner);
		snprintf(info->time, sizeof info->time, "%s", r.time);
		snprintf(info->manifest_sha256, sizeof info->manifest_sha256, "%s", r.manifest_sha256);
		snprintf(info->artifact, sizeof info->artifact, "%s", r.artifact);
		snprintf(info->artifact_sha256, sizeof info->artifact_sha256, "%s", r.artifact_sha256);
		rep_key_fingerprint(pk, info->fingerprint);
	}
out:
	sodium_memzero(seed, sizeof seed);
	free(of);
	manifest_release(&m);
	return rc;
}

/* ---- verification ---------------------------------------------------------------- */

const char *rep_role_state_name(enum rep_role_state s)
{
	switch (s) {
	case REP_ROLE_APPROVED:
		return "approved";
	case REP_ROLE_REJECTED:
		return "rejected";
	case REP_ROLE_MISSING:
		return "missing";
	case REP_ROLE_BAD_SIGNATURE:
	case REP_ROLE_STALE:
		return "bad signature";
	case REP_ROLE_UNKNOWN_KEY:
		return "unknown key";
	}
	return "unknown";
}

void rep_verify_release(struct rep_verify_result *res)
{
	if (!res)
		return;
	free(res->differences);
	free(res->problems);
	res->differences = res->problems = NULL;
}

/* Checks one role's record against its key and the current manifest digest. */
static int check_role(const char *packet_dir, const char *sdir, const struct owner_rec *ow,
		      const char *digest, struct rep_role_status *s, struct opr_error *err)
{
	char path[PATH_CAP], fp[REP_FINGERPRINT_MAX];
	struct record r;
	struct stat st;
	snprintf(s->role, sizeof s->role, "%s", ow->role);
	snprintf(s->owner, sizeof s->owner, "%s", ow->name);
	if (snprintf(path, sizeof path, "%s/%s.json", sdir, ow->role) >= (int)sizeof path)
		return opr_error_set(err, OPR_EIO, "path too long: '%s/%s.json'", sdir, ow->role);
	if (lstat(path, &st)) {
		s->state = REP_ROLE_MISSING;
		snprintf(s->detail, sizeof s->detail, "no %s/%s.json", REP_SIGNOFF_DIR, ow->role);
		return 0;
	}
	if (!ow->has_key) {
		s->state = REP_ROLE_UNKNOWN_KEY;
		snprintf(s->detail, sizeof s->detail, "%s", ow->key_error);
		return 0;
	}
	int rc = record_load(path, &r, s->detail, sizeof s->detail, err);
	if (rc < 0)
		return rc;
	s->state = REP_ROLE_BAD_SIGNATURE;
	if (rc == 1)
		return 0;
	snprintf(s->time, sizeof s->time, "%s", r.time);
	if (strcmp(r.role, ow->role)) {
		snprintf(s->detail, sizeof s->detail, "the record is for role '%s'", r.role);
		return 0;
	}
	if (strcmp(r.owner, ow->name)) {
		snprintf(s->detail, sizeof s->detail, "the record names owner '%.200s', not '%.200s'",
			 r.owner, ow->name);
		return 0;
	}
	int ok = signature_ok(&r, ow->pk, err);
	if (ok < 0)
		return ok;
	rep_key_fingerprint(ow->pk, fp);
	if (!ok) {
		snprintf(s->detail, sizeof s->detail, "does not verify with the role's key %s", fp);
		return 0;
	}
	if (strcmp(r.manifest_sha256, digest)) {
		s->state = REP_ROLE_STALE;
		snprintf(s->detail, sizeof s->detail, "it signs manifest %.16s..., not this packet's "
			 "%.16s...", r.manifest_sha256, digest);
		return 0;
	}
	if (r.artifact[0]) {
		/* the manifest covers the file; its digest must be the one signed */
		char now[REP_ROLE_MAX + 16], sha[65];
		if ((rc = artifact_of(packet_dir, ow->role, now, sizeof now, sha, err)))
			return rc;
		if (strcmp(now, r.artifact) || strcmp(sha, r.artifact_sha256)) {
			snprintf(s->detail, sizeof s->detail, "it signs artifact %.100s (sha256 %.16s...), which the packet "
				 "no longer holds as signed", r.artifact, r.artifact_sha256);
			return 0;
		}
		snprintf(s->artifact, sizeof s->artifact, "%s", r.artifact);
		snprintf(s->artifact_sha256, sizeof s->artifact_sha256, "%s", r.artifact_sha256);
	}
	s->state = strcmp(r.decision, "approve") ? REP_ROLE_REJECTED : REP_ROLE_APPROVED;
	snprintf(s->detail, sizeof s->detail, "%.500s", r.comment);
	return 0;
}

/* Records in signoff/ that belong to no role, and anything else found there. */
static int scan_signoff_dir(const char *sdir, const struct owners_file *of, struct opr_buf *probs,
			    struct opr_error *err)
{
	DIR *d = opendir(sdir);
	if (!d)
		return opr_error_set(err, OPR_EIO, "cannot list '%s': %s", sdir, strerror(errno));
	struct dirent *e;
	int n = 0;
	while ((e = readdir(d))) {
		const char *name = e->d_name;
		size_t len = strlen(name);
		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		int known = 0;
		for (int i = 0; i < of->n && !known; i++) {
			size_t rl = strlen(of->o[i].role);
			known = len == rl + 5 && !strncmp(name, of->o[i].role, rl) &&
				!strcmp(name + rl, ".json");
		}
		if (!known) {
			opr_buf_printf(probs, "unexpected entry '%s/%s' (no such role)\n", REP_SIGNOFF_DIR,
				  name);
			n++;
		}
	}
	closedir(d);
	return n;
}

/* verify's one line: "signed off", or "not signed off: " and why. */
static void verify_summary(const struct rep_verify_result *res, int nroles, int nprob, struct opr_buf *sum)
{
	if (res->signed_off) {
		opr_buf_puts(sum, "signed off");
	} else {
		const char *sep = "";
		opr_buf_puts(sum, "not signed off: ");
		if (!res->manifest_present) {
			opr_buf_puts(sum, "no MANIFEST");
			sep = "; ";
		} else if (!res->manifest_ok && res->differences) {
			opr_buf_printf(sum, "MANIFEST does not match the packet (%zu changed, %zu added, "
				  "%zu removed)", res->changed, res->added, res->removed);
			sep = "; ";
		}
		if (nprob) {
			opr_buf_printf(sum, "%s%d problem%s", sep, nprob, nprob == 1 ? "" : "s");
			sep = "; ";
		}
		for (int i = 0; i < nroles; i++) {
			if (res->roles[i].state == REP_ROLE_APPROVED)
				continue;
			opr_buf_printf(sum, "%s%s %s", sep, res->roles[i].role,
				  rep_role_state_name(res->roles[i].state));
			sep = "; ";
		}
	}
}

/* The packet's manifest now against its MANIFEST, into res; a MANIFEST that
 * cannot be read or compared is a problem (probs, *nprob) unless the cause is
 * out of memory or I/O. */
static int verify_manifest(const char *packet_dir, struct manifest_state *m, struct rep_verify_result *res,
			   struct opr_buf *probs, int *nprob, struct opr_error *err)
{
	int rc;
	rc = manifest_read(packet_dir, m, err);
	if ((rc == OPR_EINPUT || rc == OPR_ELIMIT) && err) {
		/* a symlink or a special file in a packet: not what was signed */
		char msg[sizeof err->msg];
		snprintf(msg, sizeof msg, "%s", err->msg);
		rc = opr_error_set(err, OPR_EMISMATCH, "%s", msg);
	}
	if (rc)
		return rc;
	res->nfiles = m->nfiles;
	snprintf(res->manifest_sha256, sizeof res->manifest_sha256, "%s", m->sha256);

	if (m->present) {
		res->manifest_present = 1;
		if (m->read_rc) {
			if (m->read_rc == OPR_ENOMEM || m->read_rc == OPR_EIO) {
				rc = opr_error_set(err, m->read_rc, "%s", m->read_err.msg);
				return rc;
			}
			opr_buf_printf(probs, "MANIFEST unreadable: %s\n", m->read_err.msg);
			(*nprob)++;
		} else if (m->diff_rc) {
			if (m->diff_err.code == OPR_ENOMEM) {
				rc = opr_error_set(err, OPR_ENOMEM, "%s", m->diff_err.msg);
				return rc;
			}
			opr_buf_printf(probs, "MANIFEST is malformed: line %d: %s\n", m->diff_err.line,
				       m->diff_err.msg);
			(*nprob)++;
		} else {
			res->differences = m->diff;
			m->diff = NULL;
			res->changed = m->counts[0];
			res->added = m->counts[1];
			res->removed = m->counts[2];
			/* the same files and digests; signatures are checked against
			 * the digest of the recomputed text */
			res->manifest_ok = !(m->counts[0] | m->counts[1] | m->counts[2]);
		}
	}
	return 0;
}

int rep_verify(const char *packet_dir, struct rep_verify_result *res, struct opr_error *err)
{
	struct owners_file *of = NULL;
	struct opr_buf probs = {0}, sum = {0};
	char path[PATH_CAP], sdir[PATH_CAP];
	struct manifest_state m = {0};
	struct stat st;
	int rc, nprob = 0;

	memset(res, 0, sizeof *res);
	if ((rc = crypto_ready(err)))
		return rc;
	if (!(of = malloc(sizeof *of)))
		return opr_error_set(err, OPR_ENOMEM, "out of memory verifying '%s'", packet_dir);
	if ((rc = packet_dir_ok(packet_dir, err)) ||
	    (rc = join_path(path, sizeof path, packet_dir, REP_MANIFEST_NAME, err)))
		goto out;
	struct opr_error oerr = {0};
	rc = owners_load(packet_dir, of, &oerr);
	if (rc == OPR_EINPUT && !lstat(path, &st)) {
		/* a signed packet whose owners.json broke: report it with the
		 * rest (the manifest names the change) rather than stop */
		if (oerr.line > 0)
			opr_buf_printf(&probs, "%s:%d:%d: %s\n", REP_OWNERS_NAME, oerr.line, oerr.col, oerr.msg);
		else
			opr_buf_printf(&probs, "%s\n", oerr.msg);
		nprob++;
		of->n = 0;
		rc = 0;
	} else if (rc) {
		if (err)
			*err = oerr;
		goto out;
	}
	if ((rc = verify_manifest(packet_dir, &m, res, &probs, &nprob, err)))
		goto out;

	if ((rc = join_path(sdir, sizeof sdir, packet_dir, REP_SIGNOFF_DIR, err)))
		goto out;
	if (!lstat(sdir, &st)) {
		if (!S_ISDIR(st.st_mode)) {
			opr_buf_printf(&probs, "'%s' is not a directory\n", REP_SIGNOFF_DIR);
			nprob++;
		} else {
			int n = scan_signoff_dir(sdir, of, &probs, err);
			if (n < 0) {
				rc = n;
				goto out;
			}
			nprob += n;
		}
	}
	int approved = 0;
	for (int i = 0; i < of->n; i++) {
		if ((rc = check_role(packet_dir, sdir, &of->o[i], res->manifest_sha256, &res->roles[i], err)))
			goto out;
		approved += res->roles[i].state == REP_ROLE_APPROVED;
	}
	res->nroles = of->n;
	res->signed_off = res->manifest_present && res->manifest_ok && nprob == 0 &&
			  of->n > 0 && approved == of->n;

	verify_summary(res, of->n, nprob, &sum);
	char *s = opr_buf_take(&sum);
	res->problems = opr_buf_take(&probs);
	if (!s || !res->problems) {
		free(s);
		rc = opr_error_set(err, OPR_ENOMEM, "out of memory verifying '%s'", packet_dir);
		goto out;
	}
	snprintf(res->summary, sizeof res->summary, "%s", s);
	free(s);
	if (!res->differences && !(res->differences = calloc(1, 1)))
		rc = opr_error_set(err, OPR_ENOMEM, "out of memory verifying '%s'", packet_dir);
out:
	free(opr_buf_take(&sum));
	free(opr_buf_take(&probs));
	free(of);
	manifest_release(&m);
	return rc;
}
