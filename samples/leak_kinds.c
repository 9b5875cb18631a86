/* Ground truth for leak kinds (docs/leak-kinds.md), one mode per run (argv[1]); every block's
 * contents are written (no stale pointers inside) and the stack below the exit is scrubbed, so
 * the only pointers are the ones named:
 *   dropped    malloc(100), pointer dropped            definite 100 (1)
 *   list       3 nodes of 32 bytes, head dropped        definite 32 (1), indirect 64 (2)
 *   interior   malloc(200), only base + 40 kept         possible 200 (1)
 *   globals    global -> 64 bytes -> 48 bytes           reachable 112 (2)
 *   thread     72 bytes held only by a blocked thread's stack        reachable 72 (1)
 *   register   88 bytes held only in callee-saved registers at exit  reachable 88 (1)
 *   cycle      two 48-byte blocks pointing at each other, dropped   definite 48 (1), indirect 48 (1)
 *   all        every mode above at once (the sums)
 * The process ends with exit(0) (thread mode: while the thread is still blocked). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct node {
  struct node* next;
  char payload[24];
};

static void* volatile g_root;
static char* volatile g_interior;
static volatile int g_ready;

/* Overwrites the stack below the caller with zeros: no copies of dropped pointers stay there. */
__attribute__((noinline)) static void scrub(void) {
  volatile char junk[32768];
  memset((char*)junk, 0, sizeof junk);
}

__attribute__((noinline)) static void dropped(void) {
  char* p = malloc(100);
  memset(p, 1, 100);
  p = NULL;
}

__attribute__((noinline)) static void list(void) {
  struct node* head = NULL;
  for (int i = 0; i < 3; i++) {
    struct node* n = malloc(sizeof *n);
    memset(n->payload, 2, sizeof n->payload);
    n->next = head;
    head = n;
  }
  head = NULL;
}

__attribute__((noinline)) static void interior(void) {
  char* p = malloc(200);
  memset(p, 3, 200);
  g_interior = p + 40;
}

__attribute__((noinline)) static void globals(void) {
  void** a = malloc(64);
  memset(a, 4, 64);
  void* b = malloc(48);
  memset(b, 5, 48);
  a[0] = b;
  g_root = a;
}

__attribute__((noinline)) static void* holder(void* arg) {
  (void)arg;
  void* volatile mine = malloc(72);
  memset(mine, 6, 72);
  g_ready = 1;
  for (;;) pause();
  return mine;
}

__attribute__((noinline)) static void thread(void) {
  pthread_t t;
  pthread_create(&t, NULL, holder, NULL);
  while (!g_ready) usleep(1000);
}

__attribute__((noinline)) static void cycle(void) {
  void** a = malloc(48);
  void** b = malloc(48);
  memset(a, 7, 48);
  memset(b, 7, 48);
  a[0] = b;
  b[0] = a;
}

/* The pointer goes into every callee-saved register, then exit: it is on no stack the program
 * itself wrote (exit's own code may save some of those registers on its stack: also a root). */
__attribute__((noinline)) static void* reg_block(void) {
  void* p = malloc(88);
  memset(p, 8, 88);
  return p;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "all";
  int all = strcmp(mode, "all") == 0;
  if (all || !strcmp(mode, "dropped")) dropped();
  if (all || !strcmp(mode, "list")) list();
  if (all || !strcmp(mode, "interior")) interior();
  if (all || !strcmp(mode, "globals")) globals();
  if (all || !strcmp(mode, "thread")) thread();
  if (all || !strcmp(mode, "cycle")) cycle();
  scrub();
  if (all || !strcmp(mode, "register")) {
    void* volatile p = reg_block();
    scrub();
    /* p's own stack slot is cleared once the registers hold it. */
    __asm__ volatile(
        "mov (%0), %%rax\n\tmovq $0, (%0)\n\t"
        "mov %%rax, %%rbx\n\tmov %%rax, %%r12\n\tmov %%rax, %%r13\n\tmov %%rax, %%r14\n\t"
        "mov %%rax, %%r15\n\txor %%eax, %%eax\n\txor %%edi, %%edi\n\tcall exit@PLT\n\t"
        :
        : "r"(&p)
        : "rax", "rbx", "r12", "r13", "r14", "r15", "rdi", "memory");
  }
  exit(0);
}
