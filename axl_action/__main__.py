from axl_action.cli.main import console_main

console_main()
