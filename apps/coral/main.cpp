#include <iostream>

#include "coral/cli.hpp"

int main(int argc, char** argv) { return coral::cli::run(argc, argv, std::cout, std::cerr); }
