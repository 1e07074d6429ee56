/* main.c: the mlacheck command line (placeholder until the harness lands). */
#include <stdio.h>
int main(void) { fputs("mlacheck: not yet built\n", stderr); return 2; }
