from mantispy.cli import main

main()
