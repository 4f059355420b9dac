// An LD_PRELOAD malloc counter for Tools/allocs/run: counts malloc, calloc and realloc calls (and
// frees) in the process and appends the counts to $ALLOCS_OUT on SIGUSR2. Allocation counts per
// dispatch do not move with the machine's load, as throughput does, so a change meant to allocate
// less can be checked exactly. (valgrind cannot read these Swift binaries' debug info here.)
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>
#include <string.h>
static atomic_long n_malloc, n_free;
extern void *__libc_malloc(size_t); extern void __libc_free(void*); extern void *__libc_calloc(size_t,size_t); extern void *__libc_realloc(void*,size_t);
extern int __libc_posix_memalign(void**, size_t, size_t);
void *malloc(size_t s){ atomic_fetch_add_explicit(&n_malloc,1,memory_order_relaxed); return __libc_malloc(s);}
void free(void*p){ if(p) atomic_fetch_add_explicit(&n_free,1,memory_order_relaxed); __libc_free(p);}
void *calloc(size_t a,size_t b){ atomic_fetch_add_explicit(&n_malloc,1,memory_order_relaxed); return __libc_calloc(a,b);}
void *realloc(void*p,size_t s){ atomic_fetch_add_explicit(&n_malloc,1,memory_order_relaxed); return __libc_realloc(p,s);}
static void dump(int sig){ char b[128]; int n=snprintf(b,sizeof b,"malloc=%ld free=%ld\n",atomic_load(&n_malloc),atomic_load(&n_free)); FILE*f=fopen(getenv("ALLOCS_OUT")?getenv("ALLOCS_OUT"):"/dev/stderr","a"); if(f){fwrite(b,1,n,f);fclose(f);} }
__attribute__((constructor)) static void init(void){ signal(SIGUSR2, dump); }
