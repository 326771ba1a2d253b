/*
 * pause: the process a pod sandbox holds its namespaces with (the kubelet's pod infra container).
 * Our own, built statically so the image needs nothing else. As PID 1 of the pod's PID namespace
 * it must handle signals itself (the kernel drops unhandled ones sent to PID 1) and reap the
 * orphans that are reparented to it, or they stay zombies for the pod's lifetime.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef VERSION
#define VERSION "dev"
#endif

static void stop(int sig) {
    (void)sig;
    _exit(0);
}

static void reap(int sig) {
    (void)sig;
    int saved = errno; /* a handler must not change errno under the interrupted code */
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
    errno = saved;
}

static int handle(int sig, void (*handler)(int), int flags) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = handler;
    action.sa_flags = flags;
    sigemptyset(&action.sa_mask);
    return sigaction(sig, &action, NULL);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "-v") == 0) {
        printf("pause %s (multigres-pools)\n", VERSION);
        return 0;
    }
    if (handle(SIGINT, stop, 0) || handle(SIGTERM, stop, 0) ||
        handle(SIGCHLD, reap, SA_NOCLDSTOP | SA_RESTART)) {
        perror("pause: sigaction");
        return 1;
    }
    for (;;) {
        pause();
    }
}
