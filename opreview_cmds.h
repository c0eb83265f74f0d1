/* opreview_cmds.h: every subcommand, as git's builtin.h lists its cmd_*: one
 * place to see the command line's entry points. Each lives beside its
 * module (collect/cmd_collect.c, report/cmd_sign.c, ...); opreview.c's table
 * dispatches to them. Each returns the process exit status (OPR_EXIT_*, or
 * the verdict's code). */
#ifndef OPREVIEW_CMDS_H
#define OPREVIEW_CMDS_H

int cmd_run(int argc, char **argv);       /* report/cmd_run.c */
int cmd_collect(int argc, char **argv);   /* collect/cmd_collect.c */
int cmd_ingest(int argc, char **argv);    /* collect/cmd_ingest.c */
int cmd_analyze(int argc, char **argv);   /* analyze/cmd_analyze.c */
int cmd_report(int argc, char **argv);    /* report/cmd_run.c */
int cmd_keygen(int argc, char **argv);    /* report/cmd_sign.c */
int cmd_sign(int argc, char **argv);      /* report/cmd_sign.c */
int cmd_verify(int argc, char **argv);    /* report/cmd_sign.c */
int cmd_replay(int argc, char **argv);    /* analyze/cmd_analyze.c */
int cmd_ops(int argc, char **argv);       /* ops/cmd_ops.c */
int cmd_events(int argc, char **argv);    /* collect/cmd_events.c */
int cmd_history(int argc, char **argv);   /* analyze/cmd_history.c */
int cmd_compare(int argc, char **argv);   /* report/cmd_compare.c */
int cmd_calibrate(int argc, char **argv); /* collect/cmd_calibrate.c */

#endif
