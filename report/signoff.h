/* report/signoff.h: owner sign-off of a packet: Ed25519 key files (PEM that
 * OpenSSL reads), the canonical MANIFEST of every packet file with its SHA-256,
 * signed approve/reject records in signoff/<role>.json, and verification.
 * Part of the report/ contract; included by report/report.h. */
#ifndef REPORT_SIGNOFF_H
#define REPORT_SIGNOFF_H

#include <stddef.h>
#include <time.h>

#include "../opreview.h"

struct col_owner; /* collect/profile.h */

#define REP_ED25519_KEY_BYTES 32  /* a public key, and a private key's seed */
#define REP_MAX_ROLES 16          /* owners in one packet */
#define REP_ROLE_MAX 64           /* role names, NUL included: [a-z0-9._-]+ */
#define REP_OWNER_MAX 256         /* owner names, NUL included */
#define REP_COMMENT_MAX 2048      /* bytes of a sign-off comment */
#define REP_PUBLIC_PEM_MAX 128    /* an SPKI PEM text, NUL included */
#define REP_FINGERPRINT_MAX 32    /* "sha256:" + 16 hex digits + NUL */

/* The packet's fixed names. */
#define REP_MANIFEST_NAME "MANIFEST"
#define REP_SIGNOFF_DIR "signoff"
#define REP_OWNERS_NAME "owners.json"
#define REP_CLOSURE_DIR "closure"   /* closure/<role>.md: what each role signs for */

/* ---- keys --------------------------------------------------------------------
 * A private key file is PKCS#8 PEM of the 32-byte seed, a public key file SPKI
 * PEM of the 32-byte key (RFC 8410), the forms `openssl genpkey -algorithm
 * ed25519` and `openssl pkey -pubout` write. */

/* Writes NAME.key (mode 0600) and NAME.pub from a fresh random seed. Never
 * overwrites: OPR_EEXIST when either exists (nothing is left behind). */
int rep_keygen(const char *name, struct opr_error *err);
/* Reads a private key file: its seed and the public key derived from it. */
int rep_key_read_private(const char *path, unsigned char seed[REP_ED25519_KEY_BYTES],
			 unsigned char pk[REP_ED25519_KEY_BYTES], struct opr_error *err);
/* Reads a public key file. */
int rep_key_read_public(const char *path, unsigned char pk[REP_ED25519_KEY_BYTES],
			struct opr_error *err);
/* Parses SPKI PEM text (len bytes, need not be NUL-terminated); `what` names
 * the text in messages. */
int rep_key_parse_public(const char *pem, size_t len, const char *what,
			 unsigned char pk[REP_ED25519_KEY_BYTES], struct opr_error *err);
/* The SPKI PEM text of pk, "-----BEGIN PUBLIC KEY-----\n...\n". */
void rep_key_public_pem(const unsigned char pk[REP_ED25519_KEY_BYTES],
			char out[REP_PUBLIC_PEM_MAX]);
/* "sha256:" + the first 16 hex digits of SHA-256(pk): for people to compare. */
void rep_key_fingerprint(const unsigned char pk[REP_ED25519_KEY_BYTES],
			 char out[REP_FINGERPRINT_MAX]);

/* ---- owners.json ---------------------------------------------------------------
 * {"owners":[{"role","name","public_key_pem"}]}, public_key_pem null with a
 * "key_error" reason when the owner's key file cannot be read. Key paths are
 * relative to profile_dir unless absolute. Written at packet time. */
int rep_owners_write(const char *packet_dir, const struct col_owner *owners, int n,
		     const char *profile_dir, struct opr_error *err);

/* ---- the manifest --------------------------------------------------------------
 * "opreview-manifest v1\n", then "<sha256>  <path>\n" for every regular file
 * under the packet directory, recursively, sorted bytewise by path, except the
 * top-level MANIFEST and signoff/. Symbolic links, other special files and
 * paths holding a newline are refused (OPR_EINPUT). */

/* The manifest of packet_dir as it is now. *text is malloc'd and
 * NUL-terminated (the caller frees it); nfiles may be NULL. */
int rep_manifest_build(const char *packet_dir, char **text, size_t *len, size_t *nfiles,
		       struct opr_error *err);
/* Compares a recorded manifest with a recomputed one. *diff gets one line per
 * difference, by path: "changed: P\n", "added: P\n" (in now, not in recorded),
 * "removed: P\n"; malloc'd, the caller frees it ("" when equal). counts[0..2]:
 * changed, added, removed. A malformed recorded manifest is OPR_EINPUT. */
int rep_manifest_diff(const char *recorded, size_t recorded_len, const char *now,
		      size_t now_len, char **diff, size_t counts[3], struct opr_error *err);

/* ---- signing -------------------------------------------------------------------
 * A record signoff/<role>.json holds role, owner, decision, comment, time,
 * manifest_sha256 and signature: base64 Ed25519 over the canonical text
 *   "opreview-signoff v1\nrole=R\nowner=O\ndecision=approve|reject\n"
 *   "comment=C\ntime=T\nmanifest_sha256=H\n"
 * where H is the SHA-256 of the MANIFEST text. When the packet holds the
 * role's closure artifact (closure/<role>.md) the record also names it:
 * artifact and artifact_sha256, and the text is "opreview-signoff v2\n" with
 * "artifact=P\nartifact_sha256=A\n" appended. No field holds a control
 * character, so the text has exactly one reading. */
struct rep_sign_options {
	const char *role;
	const char *key_path;   /* the owner's private key file */
	const char *comment;    /* NULL: "" */
	int reject;             /* decision "reject" instead of "approve" */
	time_t now;             /* 0: the current time */
};
/* What a signing wrote (for the caller to report). */
struct rep_signoff_info {
	char role[REP_ROLE_MAX];
	char owner[REP_OWNER_MAX];
	char time[32];
	char manifest_sha256[65];
	char fingerprint[REP_FINGERPRINT_MAX];
	char artifact[REP_ROLE_MAX + 16]; /* closure/<role>.md, "" when the packet has none */
	char artifact_sha256[65];
};
/* Checks that the role is among owners.json's (else OPR_EUSAGE) and that the key
 * is that role's (else OPR_EUSAGE); writes MANIFEST when absent, refuses with
 * OPR_EMISMATCH when MANIFEST no longer matches the packet; then writes (or
 * atomically replaces) signoff/<role>.json. info may be NULL. */
int rep_sign(const char *packet_dir, const struct rep_sign_options *o,
	     struct rep_signoff_info *info, struct opr_error *err);

/* ---- verification -------------------------------------------------------------- */
enum rep_role_state {
	REP_ROLE_APPROVED,
	REP_ROLE_REJECTED,
	REP_ROLE_MISSING,       /* no signoff/<role>.json */
	REP_ROLE_BAD_SIGNATURE, /* does not verify with the role's key, or malformed */
	REP_ROLE_STALE,         /* a good signature over another manifest */
	REP_ROLE_UNKNOWN_KEY,   /* owners.json has no key for the role */
};
/* "approved", "rejected", "missing", "bad signature", "bad signature", "unknown key" */
const char *rep_role_state_name(enum rep_role_state s);

struct rep_role_status {
	char role[REP_ROLE_MAX];
	char owner[REP_OWNER_MAX];
	enum rep_role_state state;
	char time[32];          /* the record's time, "" when none */
	char detail[512];       /* why, for states other than approved; the comment otherwise */
	char artifact[REP_ROLE_MAX + 16]; /* the closure artifact the record signs, "" if none */
	char artifact_sha256[65];
};
struct rep_verify_result {
	char manifest_sha256[65]; /* of the packet as it is now */
	size_t nfiles;
	int manifest_present;     /* MANIFEST exists */
	int manifest_ok;          /* and lists exactly the packet's files and digests */
	size_t changed, added, removed;
	char *differences;        /* "changed: P\n"...; malloc'd */
	char *problems;           /* other faults, one per line ("unexpected record ..."); malloc'd */
	struct rep_role_status roles[REP_MAX_ROLES];
	int nroles;
	int signed_off;           /* every role approved the current manifest, nothing else wrong */
	char summary[1024];       /* "signed off" or "not signed off: ..." */
};
/* Verifies packet_dir into *res (initialised here; release it with
 * rep_verify_release even on error). Returns 0 when the check could be made,
 * whatever its outcome; OPR_EINPUT when packet_dir is not a packet (no
 * owners.json, or a malformed one); OPR_EIO/OPR_ENOMEM on failures. */
int rep_verify(const char *packet_dir, struct rep_verify_result *res, struct opr_error *err);
void rep_verify_release(struct rep_verify_result *res);

#endif
