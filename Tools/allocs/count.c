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
// Forwarded to the next definition after this library: jemalloc where the program links it (reeld
// does), glibc's otherwise; the calls not counted here (posix_memalign, malloc_usable_size…) reach
// the same allocator. dlsym may allocate while it resolves: that comes from a static block.
static void *(*next_malloc)(size_t); static void (*next_free)(void*);
static void *(*next_calloc)(size_t,size_t); static void *(*next_realloc)(void*,size_t);
static _Alignas(16) char boot[1 << 16]; static size_t boot_used; static int resolving;
static int in_boot(void*p){ return (char*)p >= boot && (char*)p < boot + sizeof boot; }
static void *boot_alloc(size_t s){ s = (s + 15) & ~(size_t)15; if (boot_used + s > sizeof boot) return NULL; void*p = boot + boot_used; boot_used += s; return p; }
static void resolve(void){
  if (next_malloc) return;
  resolving = 1;
  next_calloc = dlsym(RTLD_NEXT, "calloc"); next_realloc = dlsym(RTLD_NEXT, "realloc");
  next_free = dlsym(RTLD_NEXT, "free"); next_malloc = dlsym(RTLD_NEXT, "malloc");
  resolving = 0;
}
void *malloc(size_t s){ atomic_fetch_add_explicit(&n_malloc,1,memory_order_relaxed); if(!next_malloc){ if(resolving) return boot_alloc(s); resolve(); } return next_malloc(s);}
void free(void*p){ if(!p || in_boot(p)) return; atomic_fetch_add_explicit(&n_free,1,memory_order_relaxed); if(!next_free) resolve(); next_free(p);}
void *calloc(size_t a,size_t b){ atomic_fetch_add_explicit(&n_malloc,1,memory_order_relaxed); if(!next_calloc){ if(resolving) return boot_alloc(a*b); resolve(); } return next_calloc(a,b);}
void *realloc(void*p,size_t s){ atomic_fetch_add_explicit(&n_malloc,1,memory_order_relaxed); if(!next_realloc) resolve();
  if(in_boot(p)){ void*n=next_malloc(s); if(n) memcpy(n,p,s < (size_t)(boot + sizeof boot - (char*)p) ? s : (size_t)(boot + sizeof boot - (char*)p)); return n; }
  return next_realloc(p,s);}
static void dump(int sig){ char b[128]; int n=snprintf(b,sizeof b,"malloc=%ld free=%ld\n",atomic_load(&n_malloc),atomic_load(&n_free)); FILE*f=fopen(getenv("ALLOCS_OUT")?getenv("ALLOCS_OUT"):"/dev/stderr","a"); if(f){fwrite(b,1,n,f);fclose(f);} }
__attribute__((constructor)) static void init(void){ signal(SIGUSR2, dump); }
