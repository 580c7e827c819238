from cudalens.cli import main

main()
