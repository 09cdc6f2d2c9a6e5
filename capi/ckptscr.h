/*
 * ckptscr.h: the Go half of the SCR API (cmd/libscr, libckptscr.so), as
 * capi/scr.c calls it. Each function returns 0 for success, 1 for a
 * failure the SCR call returns, 2 for a misuse SCR aborts on (the message
 * is on stderr already; the caller calls MPI_Abort).
 */
#ifndef CKPT_CKPTSCR_H
#define CKPT_CKPTSCR_H

int ckptscr_config(char* config, char** out);
int ckptscr_init_start(int rank, int size, int one_host, char* info, int info_len);
int ckptscr_init_join(int rank, int size, char* info);
void ckptscr_init_abandon(void);
int ckptscr_finalize(void);
int ckptscr_finalize_coordinator(void);
int ckptscr_route_file(char* name, char* file);
int ckptscr_have_restart(int* flag, char* name);
int ckptscr_start_restart(char* name);
int ckptscr_complete_restart(int valid);
int ckptscr_need_checkpoint(int* flag);
int ckptscr_should_exit(int* flag);
int ckptscr_start_output(char* name, int flags, int checkpoint);
int ckptscr_complete_output(int valid, int checkpoint, int any_files);
int ckptscr_current(char* name);
int ckptscr_drop(char* name);
int ckptscr_delete(char* name);
int ckptscr_enabled(void);
int ckptscr_identity(int mpi_rank, int mpi_size, int* rank, int* size, int* via_ckpt);
int ckptscr_all_valid(int valid, int files, int* out, int* any_files);
int ckptscr_root_answer(int rc, int* flag, int* worst);
int ckptscr_same(char* call, char* what, char* s);

#endif /* CKPT_CKPTSCR_H */
