/*
 * The pod sandbox's placeholder process: it holds the pod's namespaces open and does nothing else.
 * As PID 1 of the sandbox it reaps every child that is re-parented to it (no zombies pile up), and it
 * ends at once, exit code 0, on SIGINT or SIGTERM. Written for this project (images/README.md).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAUSE_VERSION "3.10.1"

static void stop(int signo)
{
	(void)signo;
	_exit(0);
}

static void reap(int signo)
{
	int saved = errno;

	(void)signo;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	errno = saved;
}

static int on(int signo, void (*handler)(int), int flags)
{
	struct sigaction action;

	memset(&action, 0, sizeof(action));
	action.sa_handler = handler;
	action.sa_flags = flags;
	sigemptyset(&action.sa_mask);
	return sigaction(signo, &action, NULL);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "-v") == 0) {
		printf("pause %s (llm-operator)\n", PAUSE_VERSION);
		return 0;
	}
	if (getpid() != 1)
		fprintf(stderr, "pause: warning: not PID 1, children of others are not reaped here\n");
	if (on(SIGINT, stop, 0) || on(SIGTERM, stop, 0) || on(SIGCHLD, reap, SA_NOCLDSTOP | SA_RESTART)) {
		perror("pause: sigaction");
		return 1;
	}
	for (;;)
		pause();
	return 42; /* not reached */
}
