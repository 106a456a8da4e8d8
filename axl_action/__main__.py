from axl_action.cli.main import main

raise SystemExit(main())
