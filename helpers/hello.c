/* The smallest useful program for timing process creation: it starts, runs the C start-up code
 * (dynamic linking included when built that way) and exits with status 0, printing nothing. */
int main(void)
{
    return 0;
}
