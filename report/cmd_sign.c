/* report/cmd_sign.c: `opreview keygen`, `opreview sign` and `opreview verify`:
 * owner sign-off of a packet (the work is in signoff.c; this file parses the
 * command line and prints results on stdout). */
#include "report_int.h"
#include "../opreview_cmds.h"

#include <string.h>

static const char *const keygen_details =
	"NAME.key holds the private key (PKCS#8 PEM, mode 0600): keep it to yourself.\n"
	"NAME.pub holds the public key (SPKI PEM): name it as `key:` of your role under\n"
	"`owners:` in the profile. Both are the forms OpenSSL reads and writes\n"
	"(`openssl pkey -in NAME.key -pubout` prints NAME.pub). Existing files are\n"
	"never overwritten (exit 5).";

static const char *const sign_details =
	"Checks that ROLE is one of the packet's owners (owners.json) and that KEY is\n"
	"that role's private key, then records the decision in PACKET/signoff/ROLE.json,\n"
	"signed with Ed25519 over the packet's MANIFEST digest. The first signer writes\n"
	"MANIFEST (SHA-256 of every packet file); a packet that no longer matches it is\n"
	"refused (exit 4). Signing a role again replaces its record.";

static const char *const verify_details =
	"Recomputes the manifest and names every changed, added or removed file, checks\n"
	"each signoff record against the role's key in owners.json and the current\n"
	"manifest digest, and prints each role's state. Exit 0 when every role approved\n"
	"this packet; 4 on any difference, bad signature, unknown key, rejection or\n"
	"missing role; 2 when PACKET is not a packet.";

int cmd_keygen(int argc, char **argv)
{
	const char *out = NULL, *pos[1];
	int npos = 0;
	const struct opr_option opts[] = {
		{OPR_OPT_PATH, "out", "NAME", "write NAME.key and NAME.pub", &out},
		{OPR_OPT_END, NULL, NULL, NULL, NULL},
	};
	const struct opr_command_help h = {"keygen", "keygen --out NAME",
		"write an owner's Ed25519 key pair", keygen_details, opts};
	struct opr_error err = {0};
	const char **req[] = {&out, NULL};
	int rc;
	if (opr_cmd_start(&h, argc, argv, pos, 0, &npos, req, 0, "keygen: '--out NAME' is required", &rc))
		return rc;
	if ((rc = rep_keygen(out, &err)))
		return opr_fail(&err);
	unsigned char pk[REP_ED25519_KEY_BYTES];
	char path[1024], fp[REP_FINGERPRINT_MAX];
	snprintf(path, sizeof path, "%s.pub", out);
	if (rep_key_read_public(path, pk, &err))
		return opr_fail(&err);
	rep_key_fingerprint(pk, fp);
	printf("wrote %s.key (private: keep it to yourself) and %s.pub (public, %s)\n", out, out, fp);
	return OPR_EXIT_OK;
}

int cmd_sign(int argc, char **argv)
{
	const char *role = NULL, *key = NULL, *comment = NULL, *pos[1];
	int reject = 0, npos = 0;
	const struct opr_option opts[] = {
		{OPR_OPT_STRING, "role", "ROLE", "the owner role signing (see the packet's owners.json)", &role},
		{OPR_OPT_PATH, "key", "KEY", "the role owner's private key file (from keygen)", &key},
		{OPR_OPT_FLAG, "reject", NULL, "record a rejection instead of an approval", &reject},
		{OPR_OPT_STRING, "comment", "TEXT", "one line recorded and signed with the decision", &comment},
		{OPR_OPT_END, NULL, NULL, NULL, NULL},
	};
	const struct opr_command_help h = {"sign",
		"sign PACKET --role ROLE --key KEY [--reject] [--comment TEXT]",
		"add an owner's signed approval or rejection to a packet", sign_details, opts};
	struct opr_error err = {0};
	struct rep_signoff_info info;
	int rc;
	if (opr_cmd_start(&h, argc, argv, pos, 1, &npos, NULL, 1, "sign: which packet? (sign PACKET --role ROLE "
			  "--key KEY)", &rc))
		return rc;
	if (!role || !key)
		rc = opr_error_set(&err, OPR_EUSAGE, "sign: '--role ROLE' and '--key KEY' are required");
	if (!rc) {
		struct rep_sign_options o = {role, key, comment, reject, 0};
		rc = rep_sign(pos[0], &o, &info, &err);
	}
	if (rc)
		return opr_fail(&err);
	printf("%s %s as %s (%s, key %s) at %s\nmanifest sha256 %s\n",
	       reject ? "rejected" : "approved", pos[0], info.role, info.owner, info.fingerprint,
	       info.time, info.manifest_sha256);
	if (info.artifact[0])
		printf("artifact %s sha256 %s\n", info.artifact, info.artifact_sha256);
	else
		printf("artifact: none (the packet holds no %s/%s.md)\n", REP_CLOSURE_DIR, info.role);
	return OPR_EXIT_OK;
}

/* Prints each "kind: path" line of a difference or problem list, indented. */
static void print_lines(const char *text)
{
	while (text && *text) {
		const char *nl = strchr(text, '\n');
		int n = nl ? (int)(nl - text) : (int)strlen(text);
		printf("  %.*s\n", n, text);
		text += n + (nl ? 1 : 0);
	}
}

int cmd_verify(int argc, char **argv)
{
	const char *pos[1];
	int npos = 0;
	const struct opr_option opts[] = {{OPR_OPT_END, NULL, NULL, NULL, NULL}};
	const struct opr_command_help h = {"verify", "verify PACKET",
		"check a packet's digests and signatures", verify_details, opts};
	struct opr_error err = {0};
	struct rep_verify_result res;
	int rc;
	if (opr_cmd_start(&h, argc, argv, pos, 1, &npos, NULL, 1, "verify: which packet? (verify PACKET)", &rc))
		return rc;
	rc = rep_verify(pos[0], &res, &err);
	if (rc) {
		rep_verify_release(&res);
		return opr_fail(&err);
	}
	printf("packet %s: %zu files, manifest sha256 %s\n", pos[0], res.nfiles,
	       res.manifest_sha256);
	if (!res.manifest_present)
		printf("manifest: missing (nobody has signed yet)\n");
	else if (res.manifest_ok)
		printf("manifest: matches the packet\n");
	else
		printf("manifest: does not match the packet\n");
	print_lines(res.differences);
	print_lines(res.problems);
	for (int i = 0; i < res.nroles; i++) {
		const struct rep_role_status *s = &res.roles[i];
		printf("%s (%s): %s", s->role, s->owner, rep_role_state_name(s->state));
		if (s->time[0] && s->state != REP_ROLE_BAD_SIGNATURE)
			printf(" at %s", s->time);
		if (s->detail[0])
			printf(": %s", s->detail);
		if (s->artifact[0])
			printf(" [artifact %s, sha256 %.16s]", s->artifact, s->artifact_sha256);
		printf("\n");
	}
	printf("%s\n", res.summary);
	rc = res.signed_off ? OPR_EXIT_OK : OPR_EXIT_MISMATCH;
	rep_verify_release(&res);
	return rc;
}
