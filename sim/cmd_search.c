#include "cmd.h"
int cmd_search(int argc, char **argv) {
    (void)argc;
    (void)argv;
    return 2;
}
