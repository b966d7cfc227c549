from ms_migrate.frontends.cli import main

if __name__ == "__main__":
    main()
