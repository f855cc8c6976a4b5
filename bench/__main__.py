from bench._cli import main

raise SystemExit(main())
