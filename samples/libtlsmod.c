// A module with its own thread-local storage, for tls_threads.c: dlopen'ed, so every thread's
// copy of `counter` is a block __tls_get_addr allocates on the thread's first access.
static __thread int counter[100];

int* tlsmod_counter(void) { return &counter[0]; }
