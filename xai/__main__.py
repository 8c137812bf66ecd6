from xai.cli import main

raise SystemExit(main())
