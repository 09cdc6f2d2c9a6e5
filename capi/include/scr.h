/*
 * scr.h: ckpt's implementation of the SCR 3.1 application interface.
 *
 * An application written for SCR builds against this header and links
 * with -lscr (ckpt's libscr.so): its checkpoints then go through ckpt's
 * node-local caches, redundancy across nodes and verified restart. Every
 * call except SCR_Route_file and SCR_Get_version is collective over
 * MPI_COMM_WORLD. A call made in the wrong state, or with a name that
 * differs across ranks, aborts the job with a message naming the call.
 *
 * See docs/C-API.md for building, linking, the parameters ckpt honours
 * and what differs from SCR.
 */
#ifndef CKPT_SCR_H
#define CKPT_SCR_H

#define SCR_MAJOR_VERSION "3"
#define SCR_MINOR_VERSION "1"
#define SCR_PATCH_VERSION "0"
#define SCR_VERSION "v3.1.0"

/* Calls return SCR_SUCCESS, or 1 on failure. */
#define SCR_SUCCESS (0)

/* The size of the buffers SCR_Route_file and SCR_Have_restart fill. */
#define SCR_MAX_FILENAME 1024

/* Dataset flags for SCR_Start_output. */
#define SCR_FLAG_NONE (0 << 0)
#define SCR_FLAG_CHECKPOINT (1 << 0) /* the dataset can be restarted from */
#define SCR_FLAG_OUTPUT (1 << 1)     /* the dataset must reach the prefix */

#ifdef __cplusplus
extern "C" {
#endif

int SCR_Init(void);
int SCR_Finalize(void);

const char* SCR_Config(const char* config);
const char* SCR_Configf(const char* format, ...);

int SCR_Route_file(const char* name, char* file);

int SCR_Have_restart(int* flag, char* name);
int SCR_Start_restart(char* name);
int SCR_Complete_restart(int valid);

int SCR_Need_checkpoint(int* flag);
int SCR_Start_checkpoint(void);
int SCR_Complete_checkpoint(int valid);

int SCR_Start_output(const char* name, int flags);
int SCR_Complete_output(int valid);

int SCR_Current(const char* name);
int SCR_Drop(const char* name);
int SCR_Delete(const char* name);

char* SCR_Get_version(void);

int SCR_Should_exit(int* flag);

#ifdef __cplusplus
}
#endif

#endif /* CKPT_SCR_H */
