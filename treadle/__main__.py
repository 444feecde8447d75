from treadle.entrypoints.cli import main

raise SystemExit(main())
